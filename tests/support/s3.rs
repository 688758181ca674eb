//! Test support: a real S3-compatible server (moto) on an ephemeral loopback port, and the
//! clients and credentials the tests use to talk to it.
//!
//! moto runs from a virtualenv at `$HOME/.cache/forkbox/moto-venv`, made on first use
//! (`python3 -m venv`, then `pip install -r python-requirements.txt`) under a file lock, so test binaries
//! and threads starting at once neither race nor install twice; `.ci/run` makes the same one
//! up front so a missing Python shows up as a clear CI step. The server stops by itself when
//! the test process that started it ends (see `moto_server.py`).
//!
//! Credentials: moto accepts any, but clients must sign with some. The aws-sdk clients built
//! here take them explicitly, and child `forkbox` processes get them in their environment
//! ([`apply_env`]). forkbox's data plane (`Store::s3`, opendal) reads them only from the
//! environment, and a test cannot set its own process's environment (`std::env::set_var` is
//! `unsafe` in edition 2024 and the workspace forbids `unsafe_code`). So a test that builds a
//! `Store::s3` in-process begins with `if !credentialed() { return; }`: it runs again as a
//! child process of its own test binary, with the credentials in the environment, and the
//! parent only checks that the child ran that one test and passed (see [`credentialed`]).

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use forkbox::storage::S3Config;

/// The moto release the tests run against, pinned so a new release cannot change results
/// (`.ci/run` installs from the same file).
const MOTO_REQUIREMENTS: &str = include_str!("python-requirements.txt");
/// The region every client names (moto's default).
pub const REGION: &str = "us-east-1";

/// What a process needs in its environment to use the test server: throwaway credentials,
/// and no instance-metadata lookups (which would leave the machine).
pub const TEST_ENV: [(&str, &str); 4] = [
    ("AWS_ACCESS_KEY_ID", "test"),
    ("AWS_SECRET_ACCESS_KEY", "test"),
    ("AWS_REGION", REGION),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

/// Variables of the developer's own AWS setup that would change which credentials or
/// endpoint a child uses; they are removed from children's environments.
const CLEARED_ENV: [&str; 11] = [
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONFIG_FILE",
];

/// Set in the environment of a test re-run by [`credentialed`].
const CHILD_MARKER: &str = "FORKBOX_TEST_S3_CHILD";
/// The endpoint of the parent's moto, for a test re-run by [`credentialed`].
const ENDPOINT_VAR: &str = "FORKBOX_TEST_S3_ENDPOINT";

/// Gives `cmd` the test credentials and removes the developer's own AWS settings.
pub fn apply_env(cmd: &mut Command) {
    for var in CLEARED_ENV {
        cmd.env_remove(var);
    }
    cmd.envs(TEST_ENV);
}

/// The Python interpreter of the tests' virtualenv (moto, asyncssh), made first if needed.
pub fn venv_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir);
            let cache = home.join(".cache/forkbox");
            std::fs::create_dir_all(&cache)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", cache.display()));
            let venv = cache.join("moto-venv");
            let python = venv.join("bin/python");
            // Written last, so a half-made virtualenv is never taken for a ready one.
            let marker = venv.join(".forkbox-ready");
            let ready = || {
                std::fs::read_to_string(&marker).is_ok_and(|s| s.trim() == MOTO_REQUIREMENTS.trim())
            };
            if ready() {
                return python;
            }
            let lock_path = cache.join("moto-venv.lock");
            let lock = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
                .unwrap_or_else(|e| panic!("cannot open {}: {e}", lock_path.display()));
            lock.lock()
                .unwrap_or_else(|e| panic!("cannot lock {}: {e}", lock_path.display()));
            if !ready() {
                let _ = std::fs::remove_dir_all(&venv);
                run_setup(Command::new("python3").args(["-m", "venv"]).arg(&venv));
                run_setup(
                    Command::new(&python)
                        .args([
                            "-m",
                            "pip",
                            "install",
                            "--quiet",
                            "--disable-pip-version-check",
                            "-r",
                        ])
                        .arg(
                            Path::new(env!("CARGO_MANIFEST_DIR"))
                                .join("tests/support/python-requirements.txt"),
                        ),
                );
                std::fs::write(&marker, MOTO_REQUIREMENTS.trim())
                    .unwrap_or_else(|e| panic!("cannot write {}: {e}", marker.display()));
            }
            python
        })
        .clone()
}

/// Runs one step of the virtualenv set-up; a failure is the test's, with the step's output.
fn run_setup(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?} (is python3 installed?): {e}"));
    assert!(
        out.status.success(),
        "setting up moto failed: {cmd:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A moto server on 127.0.0.1.
pub struct Moto {
    child: Child,
    /// Closing it stops the server.
    stdin: Option<ChildStdin>,
    pub port: u16,
    /// The server's own log (request errors, tracebacks).
    log: tempfile::NamedTempFile,
}

impl Moto {
    /// Starts a server of its own (most tests share one: [`shared`]).
    pub fn start() -> Moto {
        let python = venv_python();
        let launcher = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/moto_server.py");
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(python)
            .arg(&launcher)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.reopen().unwrap()))
            .spawn()
            .expect("start moto");
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        let port = line.trim().parse().unwrap_or_else(|_| {
            let _ = child.kill();
            panic!(
                "moto did not start: {line:?}\n{}",
                std::fs::read_to_string(log.path()).unwrap_or_default()
            )
        });
        let stdin = child.stdin.take();
        Moto {
            child,
            stdin,
            port,
            log,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server this test process shares among its tests (started on first use; it stops
/// when the process exits and the pipe to its stdin closes). Tests keep apart by using
/// buckets of their own ([`unique_bucket`]).
pub fn shared() -> &'static Moto {
    static MOTO: OnceLock<Moto> = OnceLock::new();
    MOTO.get_or_init(Moto::start)
}

/// The endpoint of the shared server (the parent's, in a test re-run by [`credentialed`]).
pub fn endpoint() -> String {
    match std::env::var(ENDPOINT_VAR) {
        Ok(e) => e,
        Err(_) => shared().endpoint(),
    }
}

/// True when this process has the test credentials in its environment, so the calling test
/// may build `Store::s3` stores. Otherwise the calling test runs again, alone, in a child
/// process of this test binary that has them (and the shared server's endpoint); the parent
/// shows the child's output, fails if the child failed or did not run exactly that test, and
/// gets `false`: the caller returns at once. Call it first thing, outside any async runtime.
pub fn credentialed() -> bool {
    if std::env::var_os(CHILD_MARKER).is_some() {
        return true;
    }
    let name = std::thread::current()
        .name()
        .expect("the test harness names each test's thread after the test")
        .to_string();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"]);
    apply_env(&mut cmd);
    cmd.env(CHILD_MARKER, "1").env(ENDPOINT_VAR, endpoint());
    let out = cmd.output().expect("re-run the test with credentials");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{name} failed in its credentialed process ({}); its output is above",
        out.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{name} did not run in its credentialed process"
    );
    false
}

/// How forkbox reaches the test server.
pub fn s3_config(endpoint: &str) -> S3Config {
    S3Config {
        endpoint: Some(endpoint.to_string()),
        region: Some(REGION.into()),
        path_style: true,
    }
}

/// A plain aws-sdk S3 client for `endpoint`, with the test credentials given explicitly
/// (no environment, no profile, no instance metadata).
pub fn client(endpoint: &str) -> Client {
    let conf = aws_sdk_s3::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .credentials_provider(Credentials::new("test", "test", None, None, "tests"))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .build();
    Client::from_conf(conf)
}

/// A bucket name no other test uses: `fb-<tag>-<random>`, lowercase, at most 63 bytes.
pub fn unique_bucket(tag: &str) -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    let mut name = format!("fb-{tag}-{}", &id[id.len() - 16..]);
    name.truncate(50);
    name
}

/// Creates bucket `name` with forkbox's own control plane.
pub async fn create_bucket(client: &Client, name: &str) {
    forkbox::fork::s3::ensure_bucket(client, name)
        .await
        .unwrap_or_else(|e| panic!("cannot create bucket {name}: {e:?}"));
}

/// Session ids with a fork in `bucket` (the `forks/<id>/` prefixes), sorted.
pub async fn forks_in(client: &Client, bucket: &str) -> Vec<String> {
    let out = client
        .list_objects_v2()
        .bucket(bucket)
        .prefix("forks/")
        .delimiter("/")
        .send()
        .await
        .unwrap_or_else(|e| panic!("cannot list {bucket}: {e:?}"));
    let mut ids: Vec<String> = out
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .map(|p| {
            p.trim_start_matches("forks/")
                .trim_end_matches('/')
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

/// Every key in `bucket` under `prefix`, sorted.
pub async fn keys_in(client: &Client, bucket: &str, prefix: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut token = None;
    loop {
        let out = client
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .set_continuation_token(token)
            .send()
            .await
            .unwrap_or_else(|e| panic!("cannot list {bucket}: {e:?}"));
        keys.extend(
            out.contents()
                .iter()
                .filter_map(|o| o.key())
                .map(str::to_string),
        );
        token = out.next_continuation_token().map(str::to_string);
        if token.is_none() {
            break;
        }
    }
    keys.sort();
    keys
}

/// A base bucket holding `files` and its forks bucket on the shared moto, with a client and
/// a runtime to look at them from a synchronous test.
pub struct Buckets {
    pub rt: tokio::runtime::Runtime,
    pub client: Client,
    pub base_bucket: String,
    pub forks_bucket: String,
}

impl Buckets {
    /// New buckets named after `tag`, the base filled with `files` (key, body).
    pub fn with_files(tag: &str, files: &[(&str, &'static str)]) -> Buckets {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = client(&shared().endpoint());
        let base_bucket = unique_bucket(tag);
        let forks_bucket = format!("{base_bucket}-forks");
        rt.block_on(async {
            create_bucket(&client, &base_bucket).await;
            create_bucket(&client, &forks_bucket).await;
            for (key, body) in files {
                client
                    .put_object()
                    .bucket(&base_bucket)
                    .key(*key)
                    .body(aws_sdk_s3::primitives::ByteStream::from_static(
                        body.as_bytes(),
                    ))
                    .send()
                    .await
                    .unwrap();
            }
        });
        Buckets {
            rt,
            client,
            base_bucket,
            forks_bucket,
        }
    }
}
