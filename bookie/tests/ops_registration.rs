//! End-to-end registration against a real ZooKeeper (scripts/zk.sh): cookies, the available
//! node and its BookieServiceInfo, read-only transitions, a node held by another session,
//! session expiry with re-registration (retried until it succeeds, never fatal), shutdown.
//! Skips (printing SKIPPED) only when ZooKeeper cannot be installed and BK_REQUIRE_ZK is unset.

// Test code sets up and inspects real directories directly; only production code is bound
// by ARCHITECTURE.md invariant 1 (see clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod ops_support;

use std::time::{Duration, Instant};

use bookie::cookie::{Cookie, CookieError, CookiePlan};
use bookie::registration::{
    resolve_bookie_address, BookieServiceInfo, Mode, Registration, RegistrationError,
};
use ops_support::*;
use zookeeper_client as zk;

fn disk() -> bk_disk::SyscallDisk {
    bk_disk::SyscallDisk::with_queue_depth(8)
}

async fn exists(c: &zk::Client, path: &str) -> bool {
    c.check_stat(path).await.unwrap().is_some()
}

async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !f().await {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_publishes_service_info_and_cookies() {
    let Some(server) = zk_server("register_publishes_service_info_and_cookies") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg1/ledgers";
    init_cluster(&obs, root, Some("11111111-2222-3333-4444-555555555555")).await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = bookie_config(server, root, tmp.path(), 3181, &[]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    assert_eq!(addr.bookie_id, "127.0.0.1:3181");

    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    assert_eq!(
        reg.instance_id().await.unwrap().as_deref(),
        Some("11111111-2222-3333-4444-555555555555")
    );
    assert_eq!(
        reg.check_cookies(&cfg, &addr, &mut disk()).await.unwrap(),
        CookiePlan::NewBookie
    );
    // Cookie in ZooKeeper and in every directory, identical text.
    let (zk_cookie, _) = obs
        .get_data(&format!("{root}/cookies/127.0.0.1:3181"))
        .await
        .unwrap();
    let file = std::fs::read(tmp.path().join("journal/current/VERSION")).unwrap();
    assert_eq!(zk_cookie, file);
    assert_eq!(
        std::fs::read(tmp.path().join("ledgers/current/VERSION")).unwrap(),
        file
    );
    let c = Cookie::parse(&zk_cookie, "zk").unwrap();
    assert_eq!(c.bookie_host, "127.0.0.1:3181");
    assert_eq!(
        c.instance_id.as_deref(),
        Some("11111111-2222-3333-4444-555555555555")
    );
    // Second start: verified.
    assert_eq!(
        reg.check_cookies(&cfg, &addr, &mut disk()).await.unwrap(),
        CookiePlan::Verified
    );

    reg.register(false).await.unwrap();
    let path = format!("{root}/available/127.0.0.1:3181");
    let (data, stat) = obs.get_data(&path).await.unwrap();
    assert_eq!(
        stat.ephemeral_owner,
        reg.client().unwrap().session_id().0,
        "ephemeral, owned by the bookie session"
    );
    let info = BookieServiceInfo::decode(&data).unwrap();
    let ep = info.rpc_endpoint().unwrap();
    assert_eq!(
        (ep.host.as_str(), ep.port, ep.id.as_str()),
        ("127.0.0.1", 3181, "bookie")
    );
    assert_eq!(
        data.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "32220a06626f6f6b696510ed181a093132372e302e302e31220a626f6f6b69652d727063",
        "same bytes as a Java bookie"
    );
    // Registering again from the same session is a no-op.
    reg.register(false).await.unwrap();

    reg.shutdown().await;
    assert!(!exists(&obs, &path).await, "shutdown unregisters");
    assert!(
        exists(&obs, &format!("{root}/cookies/127.0.0.1:3181")).await,
        "cookie survives"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_transitions_keep_the_bookie_listed() {
    let Some(server) = zk_server("read_only_transitions_keep_the_bookie_listed") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg2/ledgers";
    init_cluster(&obs, root, None).await;
    // The readonly parent is created on demand.
    obs.delete(&format!("{root}/available/readonly"), None)
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = bookie_config(server, root, tmp.path(), 3182, &[]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.check_cookies(&cfg, &addr, &mut disk()).await.unwrap();
    let w = format!("{root}/available/127.0.0.1:3182");
    let ro = format!("{root}/available/readonly/127.0.0.1:3182");

    // Transition order (create the new node, then delete the old one) is checked with zxids:
    // the new node's creation zxid is below the zxid of the last child change of the old
    // node's parent, i.e. the deletion came after the creation.
    let avail = format!("{root}/available");
    let ro_parent = format!("{root}/available/readonly");
    reg.register(false).await.unwrap();
    assert!(exists(&obs, &w).await && !exists(&obs, &ro).await);
    reg.set_read_only(true).await.unwrap();
    assert_eq!(reg.mode().await, Mode::ReadOnly);
    assert!(!exists(&obs, &w).await && exists(&obs, &ro).await);
    let (data, _) = obs.get_data(&ro).await.unwrap();
    assert_eq!(
        data,
        reg.service_info_bytes(),
        "read-only node carries the same BookieServiceInfo"
    );
    let ro_created = obs.check_stat(&ro).await.unwrap().unwrap().czxid;
    let w_deleted = obs.check_stat(&avail).await.unwrap().unwrap().pzxid;
    assert!(
        ro_created < w_deleted,
        "read-only node created before the writable node was deleted"
    );
    reg.set_read_only(false).await.unwrap();
    assert!(exists(&obs, &w).await && !exists(&obs, &ro).await);
    let w_created = obs.check_stat(&w).await.unwrap().unwrap().czxid;
    let ro_deleted = obs.check_stat(&ro_parent).await.unwrap().unwrap().pzxid;
    assert!(
        w_created < ro_deleted,
        "writable node created before the read-only node was deleted"
    );
    assert_eq!(reg.mode().await, Mode::Writable);
    // Forced read-only from the start.
    reg.shutdown().await;
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.register(true).await.unwrap();
    assert!(!exists(&obs, &w).await && exists(&obs, &ro).await);
    reg.shutdown().await;
    assert!(!exists(&obs, &ro).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_mismatches_fail_start_up() {
    let Some(server) = zk_server("cookie_mismatches_fail_start_up") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg3/ledgers";
    init_cluster(&obs, root, Some("inst-a")).await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = bookie_config(server, root, tmp.path(), 3183, &[]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.check_cookies(&cfg, &addr, &mut disk()).await.unwrap();

    // An added ledger directory (no expansion allowed).
    let extra = format!(
        "ledgerDirectories={},{}",
        tmp.path().join("ledgers").display(),
        tmp.path().join("l2").display()
    );
    let cfg2 = bookie_config(server, root, tmp.path(), 3183, &[&extra]);
    let err = reg
        .check_cookies(&cfg2, &addr, &mut disk())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RegistrationError::Cookie(CookieError::Mismatch {
                field: "ledgerDirs",
                ..
            })
        ),
        "{err}"
    );
    // ... accepted with allowStorageExpansion, and the ZooKeeper cookie is updated.
    let cfg3 = bookie_config(
        server,
        root,
        tmp.path(),
        3183,
        &[&extra, "allowStorageExpansion=true"],
    );
    let plan = reg.check_cookies(&cfg3, &addr, &mut disk()).await.unwrap();
    assert!(matches!(plan, CookiePlan::Expand { .. }), "{plan:?}");
    let (zk_cookie, _) = obs
        .get_data(&format!("{root}/cookies/127.0.0.1:3183"))
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&zk_cookie).contains("l2"));
    let cfg = cfg3;

    // A wiped directory.
    std::fs::remove_dir_all(tmp.path().join("l2")).unwrap();
    let err = reg
        .check_cookies(&cfg, &addr, &mut disk())
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::Cookie(CookieError::MissingInDirs { .. })),
        "with expansion the wiped (now empty) dir is re-adopted only if ZK cookie allows; got {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_identity_or_cluster_is_refused() {
    let Some(server) = zk_server("changed_identity_or_cluster_is_refused") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg4/ledgers";
    init_cluster(&obs, root, Some("inst-a")).await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = bookie_config(server, root, tmp.path(), 3184, &[]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.check_cookies(&cfg, &addr, &mut disk()).await.unwrap();

    // Same dirs, new bookie id: the VERSION files name the old id.
    let cfg_id = bookie_config(server, root, tmp.path(), 3184, &["bookieId=renamed-bookie"]);
    let addr_id = resolve_bookie_address(&cfg_id, cfg_id.bookie_port).unwrap();
    let err = reg
        .check_cookies(&cfg_id, &addr_id, &mut disk())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RegistrationError::Cookie(CookieError::Mismatch {
                field: "bookieHost",
                ..
            })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("renamed-bookie"), "{err}");

    // Cluster re-formatted: new INSTANCEID.
    obs.set_data(&format!("{root}/INSTANCEID"), b"inst-b", None)
        .await
        .unwrap();
    let err = reg
        .check_cookies(&cfg, &addr, &mut disk())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RegistrationError::Cookie(CookieError::Mismatch {
                field: "instanceId",
                ..
            })
        ),
        "{err}"
    );
    obs.set_data(&format!("{root}/INSTANCEID"), b"inst-a", None)
        .await
        .unwrap();

    // ZooKeeper cookie deleted (metaformat): all dirs have VERSION but ZK has none.
    obs.delete(&format!("{root}/cookies/127.0.0.1:3184"), None)
        .await
        .unwrap();
    let err = reg
        .check_cookies(&cfg, &addr, &mut disk())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RegistrationError::Cookie(CookieError::MissingInZooKeeper)
        ),
        "{err}"
    );

    // A brand-new bookie whose directories are not empty.
    let tmp2 = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp2.path().join("ledgers/current")).unwrap();
    std::fs::write(tmp2.path().join("ledgers/current/leftover.dat"), b"x").unwrap();
    let cfg_new = bookie_config(server, root, tmp2.path(), 3185, &[]);
    let addr_new = resolve_bookie_address(&cfg_new, cfg_new.bookie_port).unwrap();
    let err = reg
        .check_cookies(&cfg_new, &addr_new, &mut disk())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RegistrationError::Cookie(CookieError::NewDirNotEmpty { .. })
        ),
        "{err}"
    );

    // Uninitialized cluster.
    let cfg_bad = bookie_config(server, "/nowhere/ledgers", tmp.path(), 3184, &[]);
    let err = Registration::connect(&cfg_bad, &addr)
        .await
        .err()
        .expect("must fail");
    assert!(
        matches!(err, RegistrationError::NotInitialized { .. }),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_held_by_another_session_is_waited_for_then_refused() {
    let Some(server) = zk_server("node_held_by_another_session_is_waited_for_then_refused") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg5/ledgers";
    init_cluster(&obs, root, None).await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = bookie_config(server, root, tmp.path(), 3186, &["zkTimeout=2000"]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let path = format!("{root}/available/127.0.0.1:3186");

    // "Previous process" still holds the node.
    let squatter = observer(server).await;
    squatter
        .create(
            &path,
            b"",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    let started = Instant::now();
    let err = reg.register(false).await.unwrap_err();
    assert!(
        matches!(err, RegistrationError::AlreadyRegistered { .. }),
        "{err}"
    );
    // Twice zkTimeout: a previous process's session can outlive one zkTimeout by a
    // ZooKeeper tick (bookie/src/registration.rs, PREVIOUS_SESSION_WAIT_FACTOR).
    assert!(
        started.elapsed() >= Duration::from_millis(3900),
        "waited 2 x zkTimeout first, not {:?}",
        started.elapsed()
    );

    // Released while we wait: registration proceeds.
    let reg2 = reg.clone();
    let task = tokio::spawn(async move { reg2.register(false).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(squatter); // closes that session: its ephemeral node disappears
    task.await.unwrap().unwrap();
    let (_, stat) = obs.get_data(&path).await.unwrap();
    assert_eq!(stat.ephemeral_owner, reg.client().unwrap().session_id().0);
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_mode_change_is_retried_until_published() {
    let Some(server) = zk_server("failed_mode_change_is_retried_until_published") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg8/ledgers";
    init_cluster(&obs, root, None).await;
    let tmp = tempfile::tempdir().unwrap();
    let cfg = bookie_config(server, root, tmp.path(), 3189, &["zkTimeout=1500"]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.register(false).await.unwrap();
    let w = format!("{root}/available/127.0.0.1:3189");
    let ro = format!("{root}/available/readonly/127.0.0.1:3189");

    // Another session holds the read-only node: the transition fails, the bookie stays listed
    // as writable.
    let squatter = observer(server).await;
    squatter
        .create(
            &ro,
            b"",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let err = reg.set_read_only(true).await.unwrap_err();
    assert!(
        matches!(err, RegistrationError::AlreadyRegistered { .. }),
        "{err}"
    );
    assert_eq!(reg.mode().await, Mode::Writable);
    assert!(exists(&obs, &w).await);

    // Once released, the watcher publishes the wanted mode by itself.
    drop(squatter);
    let me = reg.client().unwrap().session_id().0;
    wait_until(
        "read-only mode re-published",
        Duration::from_secs(15),
        || async {
            matches!(obs.get_data(&ro).await, Ok((_, s)) if s.ephemeral_owner == me)
                && !exists(&obs, &w).await
        },
    )
    .await;
    assert_eq!(reg.mode().await, Mode::ReadOnly);
    reg.shutdown().await;
}

/// Expires the bookie's session: its connection (through `proxy`) is cut, a second client
/// attaches to the same session directly, runs `before_close`, and closes the session; then the
/// proxy lets the bookie reconnect, and the server answers "session expired".
async fn expire_session(
    server: &ZkServer,
    proxy: &ZkProxy,
    reg: &Registration,
    before_close: impl AsyncFnOnce(&zk::Client),
) {
    let info = reg.client().unwrap().session().clone();
    proxy.block();
    let hijack = zk::Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .with_session(info)
        .connect(&server.connect)
        .await
        .unwrap();
    before_close(&hijack).await;
    drop(hijack);
    // Let the close reach the server before the bookie may reconnect.
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.unblock();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expiry_reregisters_in_the_same_mode() {
    let Some(server) = zk_server("session_expiry_reregisters_in_the_same_mode") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg6/ledgers";
    init_cluster(&obs, root, None).await;
    let tmp = tempfile::tempdir().unwrap();
    let proxy = ZkProxy::start(&server.connect).await;
    let cfg = bookie_config_at(&proxy.connect, root, tmp.path(), 3187, &[]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.register(false).await.unwrap();
    let w = format!("{root}/available/127.0.0.1:3187");
    let ro = format!("{root}/available/readonly/127.0.0.1:3187");
    let old_session = reg.client().unwrap().session_id().0;

    expire_session(server, &proxy, &reg, async |_| {}).await;
    // The node is created by the new session before the registration swaps in its client,
    // so wait for both (checking only the node raced with the swap on a loaded machine).
    wait_until("re-registration after expiry", Duration::from_secs(20), || async {
        reg.session_expirations() >= 1
            && reg.client().is_ok_and(|c| c.session_id().0 != old_session)
            && matches!(obs.get_data(&w).await, Ok((_, s)) if s.ephemeral_owner != old_session && s.ephemeral_owner != 0)
    })
    .await;
    let new_session = reg.client().unwrap().session_id().0;
    assert_ne!(new_session, old_session);
    assert_eq!(
        obs.get_data(&w).await.unwrap().1.ephemeral_owner,
        new_session
    );

    // Read-only mode survives an expiry too.
    reg.set_read_only(true).await.unwrap();
    expire_session(server, &proxy, &reg, async |_| {}).await;
    wait_until("read-only re-registration", Duration::from_secs(20), || async {
        reg.session_expirations() >= 2
            && matches!(obs.get_data(&ro).await, Ok((_, s)) if s.ephemeral_owner != new_session && s.ephemeral_owner != 0)
    })
    .await;
    assert!(!exists(&obs, &w).await);
    assert!(reg.fatal().borrow().is_none());
    reg.shutdown().await;
    assert!(!exists(&obs, &ro).await);
}

/// A session expiry whose re-registration keeps failing is waited out, never fatal: the
/// bookie retries for as long as it takes (here: until the `available` tree is back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_reregistration_is_retried_until_it_succeeds() {
    let Some(server) = zk_server("failed_reregistration_is_retried_until_it_succeeds") else {
        return;
    };
    let obs = observer(server).await;
    let root = "/reg7/ledgers";
    init_cluster(&obs, root, None).await;
    let tmp = tempfile::tempdir().unwrap();
    let proxy = ZkProxy::start(&server.connect).await;
    let cfg = bookie_config_at(&proxy.connect, root, tmp.path(), 3188, &["zkTimeout=2000"]);
    let addr = resolve_bookie_address(&cfg, cfg.bookie_port).unwrap();
    let reg = Registration::connect(&cfg, &addr).await.unwrap();
    reg.register(false).await.unwrap();
    let fatal = reg.fatal();
    let w = format!("{root}/available/127.0.0.1:3188");
    let old_session = reg.client().unwrap().session_id().0;

    // The hijacking client owns the session: it removes the registration and the whole
    // `available` subtree before closing the session, so re-registration cannot succeed.
    let root_s = root.to_string();
    expire_session(server, &proxy, &reg, async move |c: &zk::Client| {
        c.delete(&format!("{root_s}/available/127.0.0.1:3188"), None)
            .await
            .unwrap();
        c.delete(&format!("{root_s}/available/readonly"), None)
            .await
            .unwrap();
        c.delete(&format!("{root_s}/available"), None)
            .await
            .unwrap();
    })
    .await;
    wait_until("the expiry is noticed", Duration::from_secs(20), || async {
        reg.session_expirations() >= 1
    })
    .await;
    // Before this change the bookie gave up after 2 x zkTimeout (at least 10 s) and reported
    // fatal; wait well past that while every attempt fails.
    tokio::time::sleep(Duration::from_secs(14)).await;
    assert!(
        fatal.borrow().is_none(),
        "re-registration failures must not be fatal: {:?}",
        fatal.borrow()
    );
    // Diagnostics for a failure seen once under load (cause not yet understood): who
    // holds the node, and what the `available` tree holds.
    if let Ok((_, stat)) = obs.get_data(&w).await {
        let children = obs.list_children(&format!("{root}/available")).await;
        panic!(
            "{w} exists while `available` was deleted: owner {:#x} (old session {old_session:#x}, \
             bookie session now {:#x}); available children {children:?}",
            stat.ephemeral_owner,
            reg.client().map_or(0, |c| c.session_id().0),
        );
    }

    // The operator restores the tree: the next attempt registers the bookie again.
    obs.create(&format!("{root}/available"), b"", &open())
        .await
        .unwrap();
    obs.create(&format!("{root}/available/readonly"), b"", &open())
        .await
        .unwrap();
    wait_until("re-registration once the tree is back", Duration::from_secs(20), || async {
        matches!(obs.get_data(&w).await, Ok((_, s)) if s.ephemeral_owner != old_session && s.ephemeral_owner != 0)
    })
    .await;
    assert!(fatal.borrow().is_none());
    reg.shutdown().await;
    // Shutdown deletes the node; under load its delete can time out (zkTimeout=2000 here), and
    // then the session's close removes it instead: bounded, not immediate.
    wait_until(
        "the node gone after shutdown",
        Duration::from_secs(20),
        || async { !exists(&obs, &w).await },
    )
    .await;
}
