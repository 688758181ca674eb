//! Wiring for the subcommands: builds stores, the fork strategy and the registry from the
//! configuration, then runs the server, one script, or an operator's snapshot command.
//! Errors here are start-up errors, worded for the operator.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use forkbox_commands::{Input, pipe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::config::{
    AuthMode, Backend, ExecArgs, ServeArgs, SnapshotStoreArgs, SnapshotsCommand, StoreArgs,
    Strategy, WasmArgs, WasmCommand,
};
use crate::fork::{ForkStrategy, Lease, Overlay, ServerId, SessionId, Snapshot};
use crate::janitor::{Janitor, Retention};
use crate::server::{self, Deps, Limits};
use crate::session::pool::{ForkPool, Maker};
use crate::session::{Services, SnapshotPolicy, SnapshotQuotas};
use crate::shell::{Shell, ShellConfig, Stdio};
use crate::ssh::{self, AuthPolicy};
use crate::storage::{S3Config, Store};
use crate::telemetry::http::{Endpoints, Health};
use crate::vfs::Vfs;

/// Lease of `forkbox exec`'s in-memory fork; nothing else ever sees it.
const EXEC_LEASE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// What a new default base holds, so a first login has something to look at.
const WELCOME: &str = "\
# Welcome to forkbox

Everything you see here is your own copy-on-write fork of this directory.
Change anything: nobody else sees it, and it is all deleted when you log out.

Try: ls -l; echo hi > note.txt; cat note.txt | wc -c; help
";

/// Runs `forkbox serve` until SIGINT or SIGTERM.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // First, so the start-up janitor pass is counted too.
    let metrics = match crate::telemetry::metrics::install() {
        Ok(handle) => Some(handle),
        Err(e) => {
            tracing::error!(error = %e, "cannot install the metrics recorder; /metrics is off");
            None
        }
    };
    std::fs::create_dir_all(&args.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            args.data_dir.display()
        )
    })?;
    let host_key_path = args
        .host_key
        .clone()
        .unwrap_or_else(|| args.data_dir.join("host_ed25519"));
    let host_key = ssh::load_or_generate_host_key(&host_key_path, args.host_key.is_none())?;
    let auth = match (args.auth, &args.authorized_keys) {
        (AuthMode::Anonymous, _) => AuthPolicy::anonymous(),
        (AuthMode::Keys, Some(path)) => AuthPolicy::from_authorized_keys(path)?,
        (AuthMode::Keys, None) => bail!("--auth keys needs --authorized-keys FILE"),
    };
    let auth = auth.with_min_time(std::time::Duration::from_millis(args.auth_min_time_ms));
    let (strategy, base_name, forks_store) = fork_strategy(&args).await?;
    let base_snapshot = checked_base_snapshot(&args, strategy.as_ref()).await?;
    let snaps = &args.snapshots;
    let max_count = usize::try_from(snaps.snapshot_max_count).unwrap_or(usize::MAX);
    let policy = SnapshotPolicy {
        enabled: snaps.enabled(args.auth),
        max_count,
        max_bytes: snaps.snapshot_quota_bytes,
    };
    tracing::info!(
        enabled = policy.enabled,
        max_count,
        max_bytes = policy.max_bytes,
        max_age = ?snaps.snapshot_max_age.0,
        "snapshot policy"
    );
    let janitor = Janitor {
        strategy: strategy.clone(),
        lease_ttl: args.lease_ttl(),
        delete_deadline: args.delete_deadline(),
        retention: Retention {
            max_age: snaps.snapshot_max_age.0,
            max_count: Some(max_count),
            pinned: base_snapshot.clone(),
        },
    };
    // Forks a crashed server left behind go before this one serves anyone.
    janitor.pass().await;
    let owner = ServerId::new();

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener
        .local_addr()
        .context("cannot read the listening address")?;
    let http = match args.ops.http_listen {
        Some(at) => {
            let l = tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("cannot listen on {at} (--http-listen)"))?;
            let bound = l.local_addr().context("cannot read the HTTP address")?;
            Some((l, bound))
        }
        None => None,
    };
    let (audit, audit_writer) = match &args.ops.audit {
        Some(target) => {
            let (audit, writer) = Audit::start(target, forks_store, owner)
                .await
                .context("cannot start the audit trail (--audit)")?;
            (Some(audit), Some(writer))
        }
        None => (None, None),
    };
    let health = Health::new();
    let wasi = wasi_setup(&args.wasm).await?;
    // The tools' modules are loaded while the server starts taking connections.
    if !args.wasm_lazy_load {
        crate::wasi::tools::preload(&wasi);
    }
    let drain = CancellationToken::new();
    let pool = ForkPool::new(
        Maker {
            fork: strategy.clone(),
            owner,
            lease_ttl: args.lease_ttl(),
            quota: args.quota.quota(),
            delete_deadline: args.delete_deadline(),
        },
        base_snapshot.clone(),
        count(args.fork_pool),
        args.fork_pool_max_age(),
    );
    // The pool fills while the server starts taking connections, and is emptied when it
    // begins to drain.
    let pool_task = tokio::spawn(pool.clone().run(drain.clone()));
    let services = Arc::new(Services {
        fork: strategy,
        registry: Arc::new(wasi.registry),
        system_mounts: wasi.mounts,
        delete_deadline: args.delete_deadline(),
        hostname: "forkbox".into(),
        owner,
        lease_ttl: args.lease_ttl(),
        quota: args.quota.quota(),
        limits: args.quota.session_limits(),
        cpu: cpu_governor(args.session_cpu_share),
        base_snapshot,
        snapshots: Arc::new(SnapshotQuotas::new(policy)),
        auth: args.auth,
        command_timeout: args.command_timeout(),
        motd: args.motd.clone(),
        drain,
        drain_grace: args.ops.drain_grace(),
        audit,
        pool,
    });
    let deps = Deps {
        ssh: Arc::new(server::ssh_config(host_key, &auth)),
        services,
        auth: Arc::new(auth),
        limits: Limits {
            max_sessions: count(args.max_sessions),
            max_unauthenticated: count(args.max_unauthenticated),
            max_unauthenticated_per_ip: count(args.max_unauthenticated_per_ip),
            auth_timeout: args.auth_timeout(),
            max_sessions_per_ip: count(args.max_sessions_per_ip),
            max_connections_per_minute_per_ip: count(args.max_connections_per_minute_per_ip),
            idle_timeout: args.idle_timeout(),
            max_session_lifetime: args.max_session_lifetime(),
        },
        health: health.clone(),
    };
    tracing::info!(%addr, base = %base_name, "forkbox listening");
    // A line on stdout tells scripts and tests where the server listens.
    println!("forkbox listening on {addr}");
    let stop_http = CancellationToken::new();
    let http_task = http.map(|(l, bound)| {
        tracing::info!(addr = %bound, "http side port listening (/healthz, /readyz, /metrics)");
        // The second line: where probes and scrapers connect.
        println!("forkbox http listening on {bound}");
        let endpoints = Endpoints {
            health: health.clone(),
            metrics,
        };
        tokio::spawn(crate::telemetry::http::serve(
            l,
            endpoints,
            stop_http.clone(),
        ))
    });
    let _ = std::io::stdout().flush();
    let stop_janitor = CancellationToken::new();
    let janitor_task = tokio::spawn(janitor.run(args.janitor_interval(), stop_janitor.clone()));
    let signals = stop_signals();
    let deadline = server::run(
        listener,
        deps,
        nth_signal(signals.clone(), 1),
        nth_signal(signals, 2),
    )
    .await;
    // What is left to do fits in the drain's grace period too: a janitor pass or an audit
    // upload still going at its end is abandoned (the next janitor pass, here or on
    // another server, picks up where this one stopped).
    stop_janitor.cancel();
    if tokio::time::timeout_at(deadline, janitor_task)
        .await
        .is_err()
    {
        tracing::warn!("the janitor's pass did not end within the drain's grace; abandoned");
    }
    if tokio::time::timeout_at(deadline, pool_task).await.is_err() {
        tracing::warn!(
            "the fork pool was not emptied within the drain's grace; its forks are left to the janitor"
        );
    }
    stop_http.cancel();
    if let Some(task) = http_task
        && tokio::time::timeout_at(deadline, task).await.is_err()
    {
        tracing::warn!("the http side port did not stop within the drain's grace");
    }
    if let Some(writer) = audit_writer
        && tokio::time::timeout_at(deadline, writer.finish())
            .await
            .is_err()
    {
        tracing::error!("the audit trail was not written out within the drain's grace");
    }
    Ok(())
}

/// Refuses S3 options without `--backend s3`.
fn no_s3_options(st: &StoreArgs) -> anyhow::Result<()> {
    for (flag, set) in [
        ("--base-bucket", st.base_bucket.is_some()),
        ("--forks-bucket", st.forks_bucket.is_some()),
        ("--s3-endpoint", st.s3_endpoint.is_some()),
    ] {
        if set {
            bail!("{flag} needs --backend s3");
        }
    }
    Ok(())
}

/// A count from the command line (at most a million, checked there) as a `usize`.
fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The fork strategy the storage options ask for, a name of the base for the logs, and
/// the store that holds the forks' leases (where `--audit store` writes).
async fn fork_strategy(
    args: &ServeArgs,
) -> anyhow::Result<(Arc<dyn ForkStrategy>, String, Option<Store>)> {
    let st = &args.storage.store;
    let spill = args
        .storage
        .spill_dir
        .clone()
        .unwrap_or_else(|| args.data_dir.join("spill"));
    if st.backend == Backend::S3 && args.base.is_some() {
        bail!("--base is a local directory; with --backend s3 use --base-bucket");
    }
    match (st.backend, st.fork_strategy) {
        (Backend::Fs, Strategy::Overlay) => {
            no_s3_options(st)?;
            let base_dir = match &args.base {
                Some(dir) => checked_base(dir)?,
                None => default_base(&args.data_dir)?,
            };
            let base = Store::local(&base_dir).context("cannot open the base directory")?;
            let forks = Store::local(&args.data_dir).context("cannot open the data directory")?;
            let name = base_dir.display().to_string();
            Ok((
                Arc::new(Overlay::new(base, forks.clone())),
                name,
                Some(forks),
            ))
        }
        (Backend::S3, Strategy::Overlay) => {
            let b = s3_buckets(st)?;
            let client = crate::fork::s3::client(&b.cfg).await;
            check_buckets(&client, &b).await?;
            let base = Store::s3(&b.cfg, &b.base).context("cannot open the base bucket")?;
            let forks = Store::s3(&b.cfg, &b.forks)
                .context("cannot open the forks bucket")?
                .with_spill_dir(&spill)
                .with_server_side(Arc::new(crate::fork::s3::S3ServerSide {
                    client,
                    bucket: b.forks.clone(),
                }));
            Ok((
                Arc::new(Overlay::new(base, forks.clone())),
                format!("s3://{}", b.base),
                Some(forks),
            ))
        }
        (Backend::Fs, Strategy::Tigris) => {
            bail!("--fork-strategy tigris needs --backend s3 (a Tigris endpoint)")
        }
        (Backend::S3, Strategy::Tigris) => {
            let b = s3_buckets(st)?;
            let client = crate::fork::s3::client(&b.cfg).await;
            // The names first: a bad one is refused before any request is sent.
            let tigris_config = crate::fork::TigrisConfig {
                s3: b.cfg.clone(),
                base_bucket: b.base.clone(),
                base_snapshot: args.storage.base_snapshot.clone(),
                spill_dir: spill,
            };
            let leases = Store::s3(&b.cfg, &b.forks).context("cannot open the forks bucket")?;
            let tigris = crate::fork::Tigris::new(client.clone(), tigris_config, leases.clone())
                .context("--fork-strategy tigris cannot use this configuration")?;
            check_buckets(&client, &b).await?;
            Ok((
                Arc::new(tigris),
                format!("tigris://{}", b.base),
                Some(leases),
            ))
        }
    }
}

/// The buckets the S3 options name, checked without a request.
struct S3Buckets {
    cfg: S3Config,
    base: String,
    forks: String,
}

fn s3_buckets(st: &StoreArgs) -> anyhow::Result<S3Buckets> {
    let Some(base) = st.base_bucket.clone() else {
        bail!("--backend s3 needs --base-bucket NAME");
    };
    let forks = st
        .forks_bucket
        .clone()
        .unwrap_or_else(|| format!("{base}-forks"));
    if forks == base {
        bail!("--forks-bucket must differ from --base-bucket: the base is never written");
    }
    Ok(S3Buckets {
        cfg: s3_config(st),
        base,
        forks,
    })
}

/// The base bucket must exist; the forks bucket is created if missing.
async fn check_buckets(client: &crate::fork::s3::Client, b: &S3Buckets) -> anyhow::Result<()> {
    if !crate::fork::s3::bucket_exists(client, &b.base)
        .await
        .with_context(|| format!("cannot reach the base bucket {:?}", b.base))?
    {
        bail!("the base bucket {:?} does not exist", b.base);
    }
    crate::fork::s3::ensure_bucket(client, &b.forks)
        .await
        .with_context(|| format!("cannot create the forks bucket {:?}", b.forks))
}

/// The forkbox snapshot every session starts from (`--base-snapshot`), once it is known
/// to exist. With the tigris strategy a version that is no forkbox snapshot is a Tigris
/// snapshot of the base bucket: the strategy forks every session's bucket from it itself
/// (its configuration carries it), so sessions start "from the base" and this is `None`.
async fn checked_base_snapshot(
    args: &ServeArgs,
    strategy: &dyn ForkStrategy,
) -> anyhow::Result<Option<String>> {
    let Some(version) = &args.storage.base_snapshot else {
        return Ok(None);
    };
    let tigris = matches!(args.storage.store.fork_strategy, Strategy::Tigris);
    match strategy.find_snapshot(version).await {
        Ok(Some(_)) => Ok(Some(version.clone())),
        Ok(None) if tigris => {
            tracing::info!(version = %version, "--base-snapshot is no forkbox snapshot: forking that Tigris snapshot of the base bucket");
            Ok(None)
        }
        Ok(None) => bail!(
            "--base-snapshot {version}: no such snapshot (`snapshot --list` in a session lists them)"
        ),
        Err(e) => Err(anyhow::Error::new(e))
            .with_context(|| format!("--base-snapshot {version}: cannot read the snapshot")),
    }
}

fn s3_config(st: &StoreArgs) -> S3Config {
    S3Config {
        endpoint: st.s3_endpoint.clone(),
        region: st.s3_region.clone(),
        path_style: st.s3_path_style,
    }
}

/// Runs `forkbox snapshots list|delete`; the exit status (1 when a version to delete was
/// not found or could not be deleted).
/// The server's commands with its WASI tools, found (and checked against the manifest)
/// in the `--wasm-dir` on the blocking pool. A tool missing there is logged and, when run,
/// says it is not provisioned and names `wasm/provision`.
async fn wasi_setup(args: &WasmArgs) -> anyhow::Result<crate::wasi::tools::Setup> {
    let config = args.config();
    let setup = tokio::task::spawn_blocking(move || crate::wasi::tools::setup(&config))
        .await
        .context("the WASI set-up task failed")?
        .context("cannot set up the WASI tools")?;
    if !setup.ready.is_empty() {
        let names: Vec<&str> = setup.ready.iter().map(|p| p.tool.name.as_str()).collect();
        tracing::info!(tools = %names.join(" "), "WASI tools ready");
    }
    Ok(setup)
}

/// Runs `forkbox wasm precompile` and `forkbox wasm check`.
pub async fn wasm(command: WasmCommand) -> anyhow::Result<i32> {
    let (args, compile) = match command {
        WasmCommand::Precompile(args) => (args, true),
        WasmCommand::Check(args) => (args, false),
    };
    let dir = args.config().wasm_dir;
    let setup = wasi_setup(&args).await?;
    let mut status = 0;
    for m in &setup.missing {
        eprintln!("forkbox: {}", m.reason);
        status = 1;
    }
    if !compile {
        for p in &setup.ready {
            println!("{}\t{}", p.tool.name, p.module.display());
        }
        return Ok(status);
    }
    for (name, result) in crate::wasi::tools::precompile(&setup).await {
        match result {
            Ok(took) => println!("{name}: in the module cache ({:.1}s)", took.as_secs_f64()),
            Err(e) => {
                eprintln!("forkbox: {name}: {e}");
                status = 1;
            }
        }
    }
    if setup.ready.is_empty() && setup.missing.is_empty() {
        eprintln!("forkbox: no WASI tools in the manifest");
    }
    tracing::debug!(dir = %dir.display(), "precompiled");
    Ok(status)
}

pub async fn snapshots(command: SnapshotsCommand) -> anyhow::Result<i32> {
    match command {
        SnapshotsCommand::List(args) => {
            let strategy = snapshot_strategy(&args.at).await?;
            let all = strategy
                .snapshots()
                .await
                .context("cannot list the snapshots")?;
            let out = if args.json {
                snapshots_json(&all)
            } else {
                snapshots_table(&all)
            };
            print!("{out}");
            let _ = std::io::stdout().flush();
            Ok(0)
        }
        SnapshotsCommand::Delete(args) => {
            let strategy = snapshot_strategy(&args.at).await?;
            let mut status = 0;
            for version in &args.versions {
                match strategy.delete_snapshot(version).await {
                    Ok(true) => println!("deleted {version}"),
                    Ok(false) => {
                        eprintln!("forkbox: no snapshot {version}");
                        status = 1;
                    }
                    Err(e) => {
                        eprintln!(
                            "forkbox: snapshot {version} could not be deleted: {:#}",
                            anyhow::Error::new(e)
                        );
                        status = 1;
                    }
                }
            }
            let _ = std::io::stdout().flush();
            Ok(status)
        }
    }
}

/// The fork strategy holding the snapshots the storage options name, to list and delete
/// them: nothing is created (a missing data directory or forks bucket is an error) and no
/// fork is ever made, so no base is opened.
async fn snapshot_strategy(at: &SnapshotStoreArgs) -> anyhow::Result<Arc<dyn ForkStrategy>> {
    let st = &at.store;
    // Forks are never made here: the base stays empty and unread.
    let no_base = Store::memory();
    match (st.backend, st.fork_strategy) {
        (Backend::Fs, Strategy::Overlay) => {
            no_s3_options(st)?;
            if !at.data_dir.is_dir() {
                bail!(
                    "the data directory {} does not exist",
                    at.data_dir.display()
                );
            }
            let forks = Store::local(&at.data_dir).context("cannot open the data directory")?;
            Ok(Arc::new(Overlay::new(no_base, forks)))
        }
        (Backend::Fs, Strategy::Tigris) => {
            bail!("--fork-strategy tigris needs --backend s3 (a Tigris endpoint)")
        }
        (Backend::S3, strategy) => {
            let b = s3_buckets(st)?;
            let client = crate::fork::s3::client(&b.cfg).await;
            if !crate::fork::s3::bucket_exists(&client, &b.forks)
                .await
                .with_context(|| format!("cannot reach the forks bucket {:?}", b.forks))?
            {
                bail!("the forks bucket {:?} does not exist", b.forks);
            }
            let forks = Store::s3(&b.cfg, &b.forks).context("cannot open the forks bucket")?;
            if strategy == Strategy::Overlay {
                return Ok(Arc::new(Overlay::new(no_base, forks)));
            }
            let config = crate::fork::TigrisConfig {
                s3: b.cfg.clone(),
                base_bucket: b.base.clone(),
                base_snapshot: None,
                spill_dir: at.data_dir.join("spill"),
            };
            let tigris = crate::fork::Tigris::new(client, config, forks)
                .context("--fork-strategy tigris cannot use this configuration")?;
            Ok(Arc::new(tigris))
        }
    }
}

/// A `VERSION NAME CREATED OWNER BYTES` table; what a snapshot does not record shows `-`.
fn snapshots_table(all: &[Snapshot]) -> String {
    let dash = || "-".to_string();
    let rows: Vec<[String; 5]> = all
        .iter()
        .map(|s| {
            [
                s.version.clone(),
                s.name.clone().unwrap_or_else(dash),
                crate::shell::iso8601(s.created),
                s.owner.as_ref().map_or_else(dash, |o| o.to_string()),
                s.bytes.map_or_else(dash, |b| b.to_string()),
            ]
        })
        .collect();
    let header = ["VERSION", "NAME", "CREATED", "OWNER", "BYTES"].map(str::to_string);
    let width = |col: usize| {
        rows.iter()
            .map(|r| r[col].len())
            .fold(header[col].len(), usize::max)
    };
    let w: Vec<usize> = (0..4).map(width).collect();
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        out.push_str(&format!(
            "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        ));
    }
    out
}

/// A JSON array of objects: `version`, `name`, `created` (ISO 8601, UTC), `owner`,
/// `bytes` and `session`, each `null` where not recorded.
fn snapshots_json(all: &[Snapshot]) -> String {
    use crate::shell::json_str;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "null".into());
    let items: Vec<String> = all
        .iter()
        .map(|s| {
            format!(
                "{{\"version\":{},\"name\":{},\"created\":{},\"owner\":{},\"bytes\":{},\"session\":{}}}",
                json_str(&s.version),
                opt(s.name.as_deref().map(json_str)),
                json_str(&crate::shell::iso8601(s.created)),
                opt(s.owner.as_ref().map(|o| json_str(o.as_str()))),
                opt(s.bytes.map(|b| b.to_string())),
                opt(s.session.map(|id| json_str(&id.to_string()))),
            )
        })
        .collect();
    format!("[{}]\n", items.join(","))
}

fn checked_base(dir: &Path) -> anyhow::Result<PathBuf> {
    let md = std::fs::metadata(dir)
        .with_context(|| format!("base directory {} is not readable", dir.display()))?;
    if !md.is_dir() {
        bail!("base {} is not a directory", dir.display());
    }
    Ok(dir.to_path_buf())
}

fn default_base(data_dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = data_dir.join("base");
    if !dir.exists() {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        std::fs::write(dir.join("README.md"), WELCOME)
            .with_context(|| format!("cannot seed {}", dir.display()))?;
    }
    Ok(dir)
}

/// Counts the SIGINTs and SIGTERMs the process receives, for as long as it runs: the
/// first begins a drain, the second ends it at once (see [`server::run`]).
fn stop_signals() -> watch::Receiver<u32> {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let listen = |kind: SignalKind, name: &str| match signal(kind) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::error!(error = %e, "cannot watch {name}");
            None
        }
    };
    async fn next(signal: &mut Option<Signal>) -> Option<()> {
        match signal {
            Some(s) => s.recv().await,
            None => std::future::pending().await,
        }
    }
    let mut term = listen(SignalKind::terminate(), "SIGTERM");
    let mut int = listen(SignalKind::interrupt(), "SIGINT");
    let (count, signals) = watch::channel(0u32);
    tokio::spawn(async move {
        loop {
            let name = tokio::select! {
                Some(()) = next(&mut term) => "SIGTERM",
                Some(()) = next(&mut int) => "SIGINT",
                else => return,
            };
            tracing::info!("{name} received");
            count.send_modify(|n| *n = n.saturating_add(1));
        }
    });
    signals
}

/// Completes once `n` stop signals have come; never if they can no longer come.
async fn nth_signal(mut signals: watch::Receiver<u32>, n: u32) {
    if signals.wait_for(|&count| count >= n).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Runs `forkbox exec`: one script over a throwaway in-memory fork of a directory.
pub async fn exec(args: ExecArgs) -> anyhow::Result<i32> {
    let base_dir = match &args.base {
        Some(dir) => checked_base(dir)?,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let base = Store::local(&base_dir).context("cannot open the base directory")?;
    let overlay = Overlay::new(base, Store::memory());
    let id = SessionId::new();
    let lease = Lease::new(ServerId::new(), EXEC_LEASE);
    let view = overlay
        .create(id, &lease)
        .await
        .context("cannot create the fork")?;
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    let wasi = wasi_setup(&args.wasm).await?;
    let mut shell = Shell::new(ShellConfig {
        fs: Arc::new(crate::vfs::mounts::Mounts::with_system(
            Arc::new(Vfs::with_quota(view, args.quota.quota()).with_tmp()),
            &wasi.mounts,
        )),
        registry: Arc::new(wasi.registry),
        env: crate::session::environment(&user, "forkbox", id, None),
        cwd: "/".into(),
        interactive: false,
        budget: args.quota.session_limits().budget(),
    });
    // As `bash -c SCRIPT NAME ARGS…` the first argument after a script is `$0`; a script
    // read from stdin keeps `$0` (`bash`) and gets them all, as `bash -s ARGS…` does.
    match (&args.script, args.args.split_first()) {
        (Some(_), Some((arg0, rest))) => shell.set_args(arg0, rest.to_vec()),
        (None, Some(_)) => shell.set_positional(args.args.clone()),
        (_, None) => {}
    }
    let (out_w, out_r) = pipe();
    let (err_w, err_r) = pipe();
    let out_task = tokio::spawn(copy_out(out_r, false));
    let err_task = tokio::spawn(copy_out(err_r, true));
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupt.cancel();
        }
    });
    let status = match &args.script {
        Some(script) => {
            let stdio = Stdio {
                stdin: stdin_input(),
                stdout: out_w.clone(),
                stderr: err_w.clone(),
                tty: None,
                terminal: None,
            };
            shell.run_script(script, &stdio, cancel).await
        }
        None => {
            let stdio = Stdio {
                stdin: stdin_input(),
                stdout: out_w.clone(),
                stderr: err_w.clone(),
                tty: None,
                terminal: None,
            };
            shell.run_stream(&stdio, cancel).await
        }
    };
    drop(shell);
    drop((out_w, err_w));
    let _ = out_task.await;
    let _ = err_task.await;
    Ok(status)
}

/// The process's stdin as a pipe, read only as the script consumes it.
fn stdin_input() -> Input {
    let (w, r) = pipe();
    tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if w.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    r
}

async fn copy_out(input: Input, stderr: bool) {
    let mut out: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = if stderr {
        Box::new(tokio::io::stderr())
    } else {
        Box::new(tokio::io::stdout())
    };
    while let Ok(Some(chunk)) = input.read_chunk().await {
        if out.write_all(&chunk).await.is_err() {
            break;
        }
        let _ = out.flush().await;
    }
}

/// The CPU governor of `--session-cpu-share PERCENT` over this runtime's worker threads;
/// `None` for 100 (a session may take the whole server).
fn cpu_governor(percent: u32) -> Option<Arc<forkbox_commands::cpu::CpuGovernor>> {
    if percent >= 100 {
        return None;
    }
    let cores = tokio::runtime::Handle::current().metrics().num_workers();
    let governor = forkbox_commands::cpu::CpuGovernor::new(percent, cores)
        .with_observer(Arc::new(crate::telemetry::metrics::cpu_paused));
    tracing::info!(percent, cores, "sessions share the CPU");
    Some(Arc::new(governor))
}
