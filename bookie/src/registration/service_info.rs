//! `BookieServiceInfoFormat` (DataFormats.proto), the data of the registration znodes
//! (docs/registration.md §4.2), hand-encoded: five fields do not justify a protobuf build step.
//!
//! Wire format (proto2):
//! ```text
//! BookieServiceInfoFormat { 6: repeated Endpoint endpoints; 7: map<string,string> properties }
//!   map entry on the wire = message { 1: string key; 2: string value }
//! Endpoint { 1: required string id; 2: required int32 port; 3: required string host;
//!            4: required string protocol; 5: repeated string auth; 6: repeated string extensions }
//! ```
//! Encoding writes fields in field-number order, like protobuf-java, so the bytes equal the
//! Java bookie's (checked against the 36-byte example of docs/registration.md §4.2).
//!
//! Invariants: decoding never panics; missing required Endpoint fields are an error (prost-style
//! decoders would silently default them); unknown fields are skipped as protobuf requires.

/// One published endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Endpoint {
    pub id: String,
    pub port: i32,
    pub host: String,
    pub protocol: String,
    pub auth: Vec<String>,
    pub extensions: Vec<String>,
}

/// The registration data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BookieServiceInfo {
    pub endpoints: Vec<Endpoint>,
    /// Properties in insertion order (protobuf maps are unordered; Java writes none by default).
    pub properties: Vec<(String, String)>,
}

/// Decode failure (the data is corrupt).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed BookieServiceInfo: {0}")]
pub struct ServiceInfoError(pub String);

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    put_varint(out, ((field << 3) | 2) as u64);
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

impl Endpoint {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes(&mut out, 1, self.id.as_bytes());
        put_varint(&mut out, 2 << 3);
        // int32: negative values are sign-extended to 64 bits, as protobuf does.
        put_varint(&mut out, self.port as i64 as u64);
        put_bytes(&mut out, 3, self.host.as_bytes());
        put_bytes(&mut out, 4, self.protocol.as_bytes());
        for a in &self.auth {
            put_bytes(&mut out, 5, a.as_bytes());
        }
        for e in &self.extensions {
            put_bytes(&mut out, 6, e.as_bytes());
        }
        out
    }
}

impl BookieServiceInfo {
    /// What a Java bookie publishes (docs/registration.md §4.2): the `bookie-rpc` endpoint and, if the
    /// HTTP server is enabled, the `httpserver` endpoint.
    ///
    /// `tls`: the `bookie-rpc` endpoint lists the extension `"tls"`. Java's `BookieService`
    /// adds it when `tlsProviderFactoryClass` is present in the configuration, even empty
    /// (which leaves TLS off); the `httpserver` endpoint never has it, not even with
    /// `httpServerTlsEnable` (docs/tls.md §1).
    pub fn for_bookie(
        host: &str,
        bookie_port: u16,
        http: Option<(&str, u16)>,
        tls: bool,
    ) -> BookieServiceInfo {
        let mut endpoints = vec![Endpoint {
            id: "bookie".into(),
            port: bookie_port as i32,
            host: host.into(),
            protocol: "bookie-rpc".into(),
            auth: Vec::new(),
            extensions: if tls { vec!["tls".into()] } else { Vec::new() },
        }];
        if let Some((h, p)) = http {
            endpoints.push(Endpoint {
                id: "httpserver".into(),
                port: p as i32,
                host: h.into(),
                protocol: "http".into(),
                auth: Vec::new(),
                extensions: Vec::new(),
            });
        }
        BookieServiceInfo {
            endpoints,
            properties: Vec::new(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for e in &self.endpoints {
            put_bytes(&mut out, 6, &e.encode());
        }
        for (k, v) in &self.properties {
            let mut entry = Vec::new();
            put_bytes(&mut entry, 1, k.as_bytes());
            put_bytes(&mut entry, 2, v.as_bytes());
            put_bytes(&mut out, 7, &entry);
        }
        out
    }

    pub fn decode(mut data: &[u8]) -> Result<BookieServiceInfo, ServiceInfoError> {
        let mut info = BookieServiceInfo::default();
        while !data.is_empty() {
            let (field, value) = next_field(&mut data)?;
            match (field, value) {
                (6, Value::Bytes(b)) => info.endpoints.push(decode_endpoint(b)?),
                (7, Value::Bytes(mut b)) => {
                    let (mut k, mut v) = (String::new(), String::new());
                    while !b.is_empty() {
                        match next_field(&mut b)? {
                            (1, Value::Bytes(s)) => k = utf8(s)?,
                            (2, Value::Bytes(s)) => v = utf8(s)?,
                            _ => {}
                        }
                    }
                    info.properties.push((k, v));
                }
                (6 | 7, _) => {
                    return Err(ServiceInfoError(format!(
                        "field {field} has the wrong wire type"
                    )))
                }
                _ => {}
            }
        }
        Ok(info)
    }

    /// The first `bookie-rpc` endpoint, as clients resolve it.
    pub fn rpc_endpoint(&self) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.protocol == "bookie-rpc")
    }
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Skipped,
}

fn get_varint(data: &mut &[u8]) -> Result<u64, ServiceInfoError> {
    let mut v: u64 = 0;
    for i in 0..10 {
        let (&b, rest) = data
            .split_first()
            .ok_or_else(|| ServiceInfoError("truncated varint".into()))?;
        *data = rest;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(ServiceInfoError("varint longer than 10 bytes".into()))
}

fn next_field<'a>(data: &mut &'a [u8]) -> Result<(u32, Value<'a>), ServiceInfoError> {
    let key = get_varint(data)?;
    let field =
        u32::try_from(key >> 3).map_err(|_| ServiceInfoError("field number too large".into()))?;
    let value = match key & 7 {
        0 => Value::Varint(get_varint(data)?),
        1 | 5 => {
            let n = if key & 7 == 1 { 8 } else { 4 };
            if data.len() < n {
                return Err(ServiceInfoError("truncated fixed field".into()));
            }
            *data = &data[n..];
            Value::Skipped
        }
        2 => {
            let len = get_varint(data)?;
            let len =
                usize::try_from(len).map_err(|_| ServiceInfoError("length too large".into()))?;
            if data.len() < len {
                return Err(ServiceInfoError(format!(
                    "field {field}: length {len} beyond the data"
                )));
            }
            let (b, rest) = data.split_at(len);
            *data = rest;
            Value::Bytes(b)
        }
        t => return Err(ServiceInfoError(format!("unsupported wire type {t}"))),
    };
    Ok((field, value))
}

fn utf8(b: &[u8]) -> Result<String, ServiceInfoError> {
    String::from_utf8(b.to_vec()).map_err(|_| ServiceInfoError("string is not UTF-8".into()))
}

fn decode_endpoint(mut data: &[u8]) -> Result<Endpoint, ServiceInfoError> {
    let mut e = Endpoint::default();
    let (mut id, mut port, mut host, mut proto) = (false, false, false, false);
    while !data.is_empty() {
        match next_field(&mut data)? {
            (1, Value::Bytes(b)) => (e.id, id) = (utf8(b)?, true),
            (2, Value::Varint(v)) => (e.port, port) = (v as i32, true),
            (3, Value::Bytes(b)) => (e.host, host) = (utf8(b)?, true),
            (4, Value::Bytes(b)) => (e.protocol, proto) = (utf8(b)?, true),
            (5, Value::Bytes(b)) => e.auth.push(utf8(b)?),
            (6, Value::Bytes(b)) => e.extensions.push(utf8(b)?),
            (1..=6, _) => {
                return Err(ServiceInfoError(
                    "endpoint field has the wrong wire type".into(),
                ))
            }
            _ => {}
        }
    }
    if !(id && port && host && proto) {
        return Err(ServiceInfoError(
            "endpoint lacks a required field (id, port, host, protocol)".into(),
        ));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn matches_java_bytes_for_reference_example() {
        let info = BookieServiceInfo::for_bookie("127.0.0.1", 3181, None, false);
        let bytes = info.encode();
        assert_eq!(bytes.len(), 36);
        assert_eq!(
            hex(&bytes),
            "32220a06626f6f6b696510ed181a093132372e302e302e31220a626f6f6b69652d727063"
        );
        assert_eq!(BookieServiceInfo::decode(&bytes).unwrap(), info);
    }

    #[test]
    fn tls_adds_the_extension_to_the_bookie_endpoint_only() {
        let info = BookieServiceInfo::for_bookie("127.0.0.1", 3181, Some(("0.0.0.0", 8080)), true);
        assert_eq!(info.endpoints[0].extensions, vec!["tls".to_string()]);
        assert!(
            info.endpoints[1].extensions.is_empty(),
            "httpserver: no extension"
        );
        let bytes = BookieServiceInfo::for_bookie("127.0.0.1", 3181, None, true).encode();
        // The 36 bytes above with the endpoint 5 bytes longer: `32 03 "tls"` (its field 6).
        assert_eq!(
            hex(&bytes),
            "32270a06626f6f6b696510ed181a093132372e302e302e31220a626f6f6b69652d7270633203746c73"
        );
        assert_eq!(
            BookieServiceInfo::decode(&bytes).unwrap().endpoints[0].extensions,
            vec!["tls".to_string()]
        );
    }

    #[test]
    fn round_trip_with_http_and_properties() {
        let mut info =
            BookieServiceInfo::for_bookie("bk-1.example", 3181, Some(("0.0.0.0", 8080)), true);
        info.properties.push(("k".into(), "v".into()));
        let back = BookieServiceInfo::decode(&info.encode()).unwrap();
        assert_eq!(back, info);
        assert_eq!(back.rpc_endpoint().unwrap().host, "bk-1.example");
        assert_eq!(back.endpoints[1].protocol, "http");
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        assert_eq!(
            BookieServiceInfo::decode(&[]).unwrap(),
            BookieServiceInfo::default()
        );
        // Endpoint without required fields.
        assert!(BookieServiceInfo::decode(&[0x32, 0x02, 0x0a, 0x00]).is_err());
        for bad in [
            &[0x32u8][..],
            &[0x32, 0x10, 0x01],
            &[0xff; 12],
            &[0x33],
            &[0x30, 0x01],
        ] {
            assert!(BookieServiceInfo::decode(bad).is_err(), "{bad:?}");
        }
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for len in 0..400usize {
            let buf: Vec<u8> = (0..len % 40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = BookieServiceInfo::decode(&buf);
        }
    }
}
