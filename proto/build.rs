//! Compiles proto/BookkeeperProtocol.proto (v3 wire messages) with protox (pure Rust, no
//! protoc on the build machines) and prost-build. `bytes` fields become `bytes::Bytes` so that
//! decoding a frame slices entry bodies out of it instead of copying them.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/BookkeeperProtocol.proto");
    let fds = protox::compile(["BookkeeperProtocol.proto"], ["proto"])?;
    prost_build::Config::new().bytes(["."]).compile_fds(fds)?;
    Ok(())
}
