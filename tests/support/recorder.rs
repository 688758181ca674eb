//! Test support: a small S3-compatible HTTP/1.1 server on `127.0.0.1:0` that records every
//! request it receives, so a test can check exactly what forkbox sent (headers included).
//!
//! It keeps buckets and objects in memory and answers, path-style only and without
//! checking signatures, the requests aws-sdk-s3 and opendal make for forkbox: ListBuckets,
//! CreateBucket, HeadBucket, DeleteBucket, ListObjectsV2 (prefix, delimiter, max-keys,
//! start-after, continuation-token), PutObject, CopyObject, GetObject (ranges included),
//! HeadObject and DeleteObject. Anything else is answered `501 NotImplemented` (and recorded),
//! so a test notices a request it did not expect.
//!
//! It also plays Tigris for the extensions forkbox uses:
//! - a CreateBucket carrying `X-Tigris-Fork-Source-Bucket` starts with a copy of the source's
//!   objects, or with those of the source's snapshot named by
//!   `X-Tigris-Fork-Source-Bucket-Snapshot` (`400 InvalidArgument` for a version the source
//!   does not have); `X-Tigris-Enable-Snapshot: true` makes the new bucket snapshot-enabled;
//! - a CreateBucket of an existing bucket carrying `X-Tigris-Snapshot: true` (or
//!   `true; name=<name>`) freezes a copy of its objects under a new version, a nanosecond
//!   timestamp larger than any before, and answers it in `X-Tigris-Snapshot-Version`;
//! - a ListBuckets carrying `X-Tigris-Snapshot: <bucket>` lists that bucket's snapshots,
//!   oldest first, each named `<version>` or `<version>; name=<name>`;
//! - only snapshot-enabled buckets may be snapshotted or forked (`400 InvalidRequest`);
//!   buckets a test makes directly ([`Recorder::create_bucket`], [`Recorder::put`]) are;
//! - a DeleteBucket without `X-Tigris-Force-Delete` refuses a bucket that holds objects,
//!   and deleting a bucket drops its snapshots (forks made from them keep their objects);
//! - a CopyObject with `X-Tigris-Rename: true` moves the object instead of copying it.
//!
//! A test can make requests fail ([`Recorder::fail`]) and make snapshot answers carry
//! another version header, or none ([`Recorder::answer_snapshot_version`]).
//!
//! A test can make GetObject of one key fail ([`Recorder::fail_gets`]): it is answered
//! `403 AccessDenied`, which no client retries, so the failure reaches the caller at once.
//!
//! The server runs on a thread of its own (usable from synchronous and async tests alike)
//! and stops when the [`Recorder`] is dropped.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Names the test a child process of a test binary is to run (see [`in_child`]).
const CHILD: &str = "FORKBOX_RECORDER_TEST_CHILD";

/// The environment of every process that talks to the recorder: test credentials (the
/// recorder checks no signature) and nothing from the host's AWS configuration.
pub fn s3_test_env(cmd: &mut std::process::Command) -> &mut std::process::Command {
    cmd.env("AWS_ACCESS_KEY_ID", "forkbox-test-key")
        .env("AWS_SECRET_ACCESS_KEY", "forkbox-test-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ENDPOINT_URL_S3")
}

/// forkbox takes S3 credentials from the environment only, and a test may not change its
/// own environment (that is `unsafe`, and the crate forbids it). So a test that talks S3
/// in-process runs its body in a child: this test binary again, filtered to that one test,
/// with [`s3_test_env`]. Returns `false` in the child, which then runs the body, and `true`
/// in the parent once the child has passed.
pub fn in_child(test: &str) -> bool {
    if std::env::var(CHILD).as_deref() == Ok(test) {
        return false;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = std::process::Command::new(exe);
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test);
    let out = s3_test_env(&mut cmd)
        .output()
        .expect("run the test in a child");
    let so = String::from_utf8_lossy(&out.stdout);
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child test failed:\n{so}\n{se}");
    // The filter matched exactly this test, so it did run.
    assert!(so.contains("1 passed"), "child ran no test:\n{so}\n{se}");
    true
}

/// Largest request head (request line and headers) accepted.
const HEAD_MAX: usize = 64 * 1024;
/// Largest request body accepted; forkbox's tests write small objects.
const BODY_MAX: usize = 64 * 1024 * 1024;
/// Most entries in one ListObjectsV2 page when the client asks for no fewer.
const LIST_PAGE: usize = 1000;

/// One request as it arrived.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// The path, percent-decoded: `/bucket/key`.
    pub path: String,
    /// The bucket the path names (`""` for `/`).
    pub bucket: String,
    /// The object key the path names (`""` for a bucket-level request).
    pub key: String,
    /// Query parameters in order, percent-decoded.
    pub query: Vec<(String, String)>,
    /// Header names lowercased; repeated headers joined with `,`.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// A GET or HEAD: a request that changes nothing.
    pub fn is_read(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Debug)]
struct Object {
    data: Vec<u8>,
    content_type: String,
    /// `x-amz-meta-*` headers, names lowercased and without the prefix.
    meta: BTreeMap<String, String>,
    etag: String,
    modified: SystemTime,
}

#[derive(Debug, Default)]
struct Bucket {
    objects: BTreeMap<String, Object>,
    created: Option<SystemTime>,
    /// Created with `X-Tigris-Enable-Snapshot: true` (or directly by a test).
    snapshots_enabled: bool,
    /// Frozen copies of the objects, oldest first.
    snapshots: Vec<Frozen>,
}

/// One snapshot of a bucket.
#[derive(Clone, Debug)]
struct Frozen {
    version: String,
    name: Option<String>,
    created: SystemTime,
    objects: BTreeMap<String, Object>,
}

/// A request the recorder answers with an error instead of serving it.
struct Fault {
    matches: Box<dyn Fn(&Recorded) -> bool + Send>,
    /// Requests it still fails.
    left: usize,
    /// Serve the request first, then answer the error (the answer was lost, not the work).
    applied: bool,
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fault")
            .field("left", &self.left)
            .field("applied", &self.applied)
            .finish()
    }
}

#[derive(Debug, Default)]
struct State {
    buckets: BTreeMap<String, Bucket>,
    log: Vec<Recorded>,
    /// Most buckets in one ListBuckets page (`None`: all of them).
    bucket_page: Option<usize>,
    /// The last snapshot version handed out (Unix nanoseconds).
    last_version: u128,
    faults: Vec<Fault>,
    /// What snapshot answers carry in `X-Tigris-Snapshot-Version` instead of the version
    /// (`Some(None)`: no such header).
    snapshot_answer: Option<Option<String>>,
    /// Keys whose GetObject is refused, with how many more times.
    failing_gets: BTreeMap<String, usize>,
}

impl State {
    /// A new snapshot version: the time in nanoseconds, larger than any before.
    fn next_version(&mut self) -> String {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        self.last_version = now.max(self.last_version + 1);
        self.last_version.to_string()
    }

    /// Freezes `bucket`'s objects as a new snapshot; its version.
    fn freeze(&mut self, bucket: &str, name: Option<&str>) -> Option<String> {
        let version = self.next_version();
        let b = self.buckets.get_mut(bucket)?;
        b.snapshots.push(Frozen {
            version: version.clone(),
            name: name.map(str::to_string),
            created: SystemTime::now(),
            objects: b.objects.clone(),
        });
        Some(version)
    }

    /// The first fault matching `req`, counted down; whether it serves the request first.
    fn fault(&mut self, req: &Recorded) -> Option<bool> {
        let i = self
            .faults
            .iter()
            .position(|f| f.left > 0 && (f.matches)(req))?;
        self.faults[i].left -= 1;
        Some(self.faults[i].applied)
    }
}

/// The running server; see the module documentation.
pub struct Recorder {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the recorder");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let served = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the recorder's runtime");
            rt.block_on(serve(listener, served, stopped));
        });
        Recorder {
            addr,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The endpoint URL to give a client (`http://127.0.0.1:PORT`).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state().log.clone()
    }

    /// Waits until a request matching `pred` has arrived (asynchronous work such as a
    /// fork's deletion after a logout); fails the test if none comes within `within`.
    pub fn wait_for(&self, within: Duration, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        let start = Instant::now();
        loop {
            if let Some(r) = self.state().log.iter().find(|r| pred(r)) {
                return r.clone();
            }
            assert!(
                start.elapsed() < within,
                "expected request never came; received:\n{}",
                self.summary()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One line per request received, for failure messages.
    pub fn summary(&self) -> String {
        self.state()
            .log
            .iter()
            .map(|r| {
                let tigris: Vec<String> = r
                    .headers
                    .iter()
                    .filter(|(k, _)| k.starts_with("x-tigris-"))
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect();
                format!("{} {} {:?} {tigris:?}\n", r.method, r.path, r.query)
            })
            .collect()
    }

    /// Creates a bucket directly (as if it always existed), snapshot-enabled.
    pub fn create_bucket(&self, name: &str) {
        let mut st = self.state();
        let b = st.buckets.entry(name.to_string()).or_default();
        b.created = Some(SystemTime::now());
        b.snapshots_enabled = true;
    }

    /// Stores an object directly, creating its bucket (snapshot-enabled) if needed.
    pub fn put(&self, bucket: &str, key: &str, data: &[u8]) {
        let mut st = self.state();
        let b = st.buckets.entry(bucket.to_string()).or_default();
        if b.created.is_none() {
            b.created = Some(SystemTime::now());
            b.snapshots_enabled = true;
        }
        b.objects.insert(
            key.to_string(),
            object(data.to_vec(), None, BTreeMap::new()),
        );
    }

    /// The content of an object, if it exists.
    pub fn object(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        self.state()
            .buckets
            .get(bucket)?
            .objects
            .get(key)
            .map(|o| o.data.clone())
    }

    /// The names of the buckets that exist.
    pub fn buckets(&self) -> Vec<String> {
        self.state().buckets.keys().cloned().collect()
    }

    /// The keys of the objects in `bucket`.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        self.state()
            .buckets
            .get(bucket)
            .map(|b| b.objects.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Refuses the next `times` GetObject requests of `key` (in any bucket) with
    /// `403 AccessDenied`.
    pub fn fail_gets(&self, key: &str, times: usize) {
        self.state().failing_gets.insert(key.to_string(), times);
    }

    /// Makes ListBuckets answer at most `n` buckets per page, so paging is exercised.
    pub fn set_bucket_page(&self, n: usize) {
        self.state().bucket_page = Some(n.max(1));
    }

    /// Takes a snapshot of `bucket` directly (as an operator would); its version.
    pub fn snapshot(&self, bucket: &str, name: Option<&str>) -> String {
        self.state()
            .freeze(bucket, name)
            .unwrap_or_else(|| panic!("no bucket {bucket} to snapshot"))
    }

    /// The snapshots of `bucket`, oldest first: version and name.
    pub fn snapshots(&self, bucket: &str) -> Vec<(String, Option<String>)> {
        self.state()
            .buckets
            .get(bucket)
            .map(|b| {
                b.snapshots
                    .iter()
                    .map(|s| (s.version.clone(), s.name.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The keys and contents of the objects in snapshot `version` of `bucket`.
    pub fn snapshot_objects(&self, bucket: &str, version: &str) -> Vec<(String, Vec<u8>)> {
        self.state()
            .buckets
            .get(bucket)
            .and_then(|b| b.snapshots.iter().find(|s| s.version == version))
            .map(|s| {
                s.objects
                    .iter()
                    .map(|(k, o)| (k.clone(), o.data.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Answers the next `times` requests matching `matches` with `403 AccessDenied` (an
    /// error no client retries). With `applied`, the request is served first: the work was
    /// done, only its answer says otherwise.
    pub fn fail(
        &self,
        times: usize,
        applied: bool,
        matches: impl Fn(&Recorded) -> bool + Send + 'static,
    ) {
        self.state().faults.push(Fault {
            matches: Box::new(matches),
            left: times,
            applied,
        });
    }

    /// Makes snapshot answers carry `version` in `X-Tigris-Snapshot-Version` instead of the
    /// snapshot's own, or no such header for `None` (the snapshot is taken all the same).
    pub fn answer_snapshot_version(&self, version: Option<&str>) {
        self.state().snapshot_answer = Some(version.map(str::to_string));
    }

    /// Undoes [`Recorder::answer_snapshot_version`]: answers carry the real versions.
    pub fn answer_real_snapshot_versions(&self) {
        self.state().snapshot_answer = None;
    }

    /// Deletes a bucket directly, with its objects and snapshots.
    pub fn delete_bucket(&self, name: &str) {
        self.state().buckets.remove(name);
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn object(data: Vec<u8>, content_type: Option<&str>, meta: BTreeMap<String, String>) -> Object {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    Object {
        etag: format!("\"{:016x}\"", h.finish()),
        content_type: content_type
            .unwrap_or("application/octet-stream")
            .to_string(),
        data,
        meta,
        modified: SystemTime::now(),
    }
}

async fn serve(
    listener: std::net::TcpListener,
    state: Arc<Mutex<State>>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("the recorder's listener");
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(connection(stream, state.clone()));
                }
            }
        }
    }
}

/// Serves the requests of one connection until the client closes it or sends garbage.
async fn connection(stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut stream = BufReader::new(stream);
    loop {
        let req = match read_request(&mut stream).await {
            Ok(Some(req)) => req,
            Ok(None) | Err(_) => return,
        };
        let close = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let resp = {
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            st.log.push(req.clone());
            match st.fault(&req) {
                None => handle(&mut st, &req),
                Some(applied) => {
                    if applied {
                        handle(&mut st, &req);
                    }
                    Response::error(403, "AccessDenied", &req.path)
                }
            }
        };
        if write_response(stream.get_mut(), &req.method, resp)
            .await
            .is_err()
            || close
        {
            return;
        }
    }
}

async fn read_request(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Recorded>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut line = String::new();
    if r.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad("bad request line"));
    };
    let (method, target) = (method.to_string(), target.to_string());
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    let mut head_len = line.len();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Err(bad("connection closed in the request head"));
        }
        head_len += line.len();
        if head_len > HEAD_MAX {
            return Err(bad("request head too large"));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(bad("bad header line"));
        };
        headers
            .entry(name.trim().to_ascii_lowercase())
            .and_modify(|v| {
                v.push(',');
                v.push_str(value.trim());
            })
            .or_insert_with(|| value.trim().to_string());
    }
    if headers
        .get("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        r.get_mut()
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await?;
    }
    let mut body = Vec::new();
    if headers
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        loop {
            line.clear();
            r.read_line(&mut line).await?;
            let size = line.trim().split(';').next().unwrap_or_default();
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if body.len() + size > BODY_MAX {
                return Err(bad("body too large"));
            }
            if size == 0 {
                // Trailers, up to the blank line.
                loop {
                    line.clear();
                    if r.read_line(&mut line).await? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..]).await?;
            line.clear();
            r.read_line(&mut line).await?;
        }
    } else if let Some(len) = headers.get("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        if len > BODY_MAX {
            return Err(bad("body too large"));
        }
        body.resize(len, 0);
        r.read_exact(&mut body).await?;
    }
    let (raw_path, raw_query) = target.split_once('?').unwrap_or((&target, ""));
    let path = decode(raw_path);
    let rest = path.strip_prefix('/').unwrap_or(&path);
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let query = raw_query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    Ok(Some(Recorded {
        method,
        bucket: bucket.to_string(),
        key: key.to_string(),
        path,
        query,
        headers,
        body,
    }))
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    fn xml(status: u16, body: String) -> Response {
        Response::new(status)
            .with("content-type", "application/xml")
            .body(body.into_bytes())
    }

    fn error(status: u16, code: &str, resource: &str) -> Response {
        Response::xml(
            status,
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
                 <Message>{code}</Message><Resource>{}</Resource>\
                 <RequestId>recorder</RequestId></Error>",
                esc(resource)
            ),
        )
    }

    fn with(mut self, name: &str, value: impl Into<String>) -> Response {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    fn body(mut self, body: Vec<u8>) -> Response {
        self.body = body;
        self
    }
}

async fn write_response(s: &mut TcpStream, method: &str, resp: Response) -> std::io::Result<()> {
    let reason = match resp.status {
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        416 => "Range Not Satisfiable",
        _ => "Not Implemented",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", resp.status);
    let mut has_len = false;
    for (k, v) in &resp.headers {
        has_len |= k == "content-length";
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !has_len {
        head.push_str(&format!("content-length: {}\r\n", resp.body.len()));
    }
    head.push_str("x-amz-request-id: recorder\r\n\r\n");
    s.write_all(head.as_bytes()).await?;
    // A HEAD response tells the length of what a GET would send, but sends nothing.
    if method != "HEAD" && resp.status != 204 {
        s.write_all(&resp.body).await?;
    }
    s.flush().await
}

/// XML-escapes text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn iso(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn http_date(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

fn truthy(req: &Recorded, name: &str) -> bool {
    req.header(name)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn handle(st: &mut State, req: &Recorded) -> Response {
    let m = req.method.as_str();
    if req.bucket.is_empty() {
        return match m {
            "GET" => list_buckets(st, req),
            _ => Response::error(501, "NotImplemented", &req.path),
        };
    }
    if req.key.is_empty() {
        return match m {
            "PUT" => create_bucket(st, req),
            "HEAD" if st.buckets.contains_key(&req.bucket) => Response::new(200),
            "HEAD" => Response::new(404),
            "DELETE" => delete_bucket(st, req),
            "GET" if req.query("list-type") == Some("2") => list_objects(st, req),
            _ => Response::error(501, "NotImplemented", &req.path),
        };
    }
    if !st.buckets.contains_key(&req.bucket) {
        return Response::error(404, "NoSuchBucket", &req.bucket);
    }
    match m {
        "PUT" if req.header("x-amz-copy-source").is_some() => copy_object(st, req),
        "PUT" if req.query.is_empty() || req.query("x-id") == Some("PutObject") => {
            put_object(st, req)
        }
        "GET" if refuse_get(st, &req.key) => Response::error(403, "AccessDenied", &req.key),
        "GET" | "HEAD" if req.query.iter().all(|(k, _)| k == "x-id") => get_object(st, req),
        "DELETE" if req.query.iter().all(|(k, _)| k == "x-id") => {
            if let Some(b) = st.buckets.get_mut(&req.bucket) {
                b.objects.remove(&req.key);
            }
            Response::new(204)
        }
        _ => Response::error(501, "NotImplemented", &req.path),
    }
}

/// True when a GetObject of `key` is to be refused (see [`Recorder::fail_gets`]).
fn refuse_get(st: &mut State, key: &str) -> bool {
    match st.failing_gets.get_mut(key) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}

fn list_buckets(st: &State, req: &Recorded) -> Response {
    if let Some(bucket) = req.header("x-tigris-snapshot") {
        return list_snapshots(st, bucket);
    }
    let prefix = req.query("prefix").unwrap_or_default();
    let after = req.query("continuation-token").unwrap_or_default();
    let mut limit = req
        .query("max-buckets")
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    if let Some(page) = st.bucket_page {
        limit = limit.min(page);
    }
    let names: Vec<&String> = st
        .buckets
        .keys()
        .filter(|n| n.starts_with(prefix) && n.as_str() > after)
        .collect();
    let page = &names[..names.len().min(limit)];
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListAllMyBucketsResult \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>recorder</ID>\
         <DisplayName>recorder</DisplayName></Owner><Buckets>",
    );
    for name in page {
        let created = st.buckets[*name].created.unwrap_or(SystemTime::UNIX_EPOCH);
        xml.push_str(&format!(
            "<Bucket><Name>{}</Name><CreationDate>{}</CreationDate></Bucket>",
            esc(name),
            iso(created)
        ));
    }
    xml.push_str("</Buckets>");
    if page.len() < names.len()
        && let Some(last) = page.last()
    {
        xml.push_str(&format!(
            "<ContinuationToken>{}</ContinuationToken>",
            esc(last)
        ));
    }
    if !prefix.is_empty() {
        xml.push_str(&format!("<Prefix>{}</Prefix>", esc(prefix)));
    }
    xml.push_str("</ListAllMyBucketsResult>");
    Response::xml(200, xml)
}

/// The snapshots of `bucket` as Tigris lists them: one `Bucket` per snapshot, oldest first.
fn list_snapshots(st: &State, bucket: &str) -> Response {
    let Some(b) = st.buckets.get(bucket) else {
        return Response::error(404, "NoSuchBucket", bucket);
    };
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListAllMyBucketsResult \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>recorder</ID>\
         <DisplayName>recorder</DisplayName></Owner><Buckets>",
    );
    for s in &b.snapshots {
        let name = match &s.name {
            Some(n) => format!("{}; name={n}", s.version),
            None => s.version.clone(),
        };
        xml.push_str(&format!(
            "<Bucket><Name>{}</Name><CreationDate>{}</CreationDate></Bucket>",
            esc(&name),
            iso(s.created)
        ));
    }
    xml.push_str("</Buckets></ListAllMyBucketsResult>");
    Response::xml(200, xml)
}

/// The name an `X-Tigris-Snapshot` header of a snapshot request gives (`true; name=<n>`);
/// `Err` for a value that asks for no snapshot.
fn snapshot_request(value: &str) -> Result<Option<String>, ()> {
    let mut parts = value.split(';').map(str::trim);
    if !parts.next().is_some_and(|p| p.eq_ignore_ascii_case("true")) {
        return Err(());
    }
    let mut name = None;
    for p in parts {
        match p.split_once('=') {
            Some(("name", n)) if !n.is_empty() => name = Some(n.to_string()),
            _ => return Err(()),
        }
    }
    Ok(name)
}

fn create_bucket(st: &mut State, req: &Recorded) -> Response {
    if let Some(value) = req.header("x-tigris-snapshot") {
        return take_snapshot(st, req, value);
    }
    if st.buckets.contains_key(&req.bucket) {
        return Response::error(409, "BucketAlreadyOwnedByYou", &req.bucket);
    }
    let mut bucket = Bucket {
        objects: BTreeMap::new(),
        created: Some(SystemTime::now()),
        snapshots_enabled: truthy(req, "x-tigris-enable-snapshot"),
        snapshots: Vec::new(),
    };
    if let Some(source) = req.header("x-tigris-fork-source-bucket") {
        let Some(src) = st.buckets.get(source) else {
            return Response::error(404, "NoSuchBucket", source);
        };
        if !src.snapshots_enabled {
            return Response::error(400, "InvalidRequest", source);
        }
        bucket.objects = match req.header("x-tigris-fork-source-bucket-snapshot") {
            None => src.objects.clone(),
            Some(version) => match src.snapshots.iter().find(|s| s.version == version) {
                Some(frozen) => frozen.objects.clone(),
                None => return Response::error(400, "InvalidArgument", version),
            },
        };
    }
    st.buckets.insert(req.bucket.clone(), bucket);
    Response::new(200).with("location", format!("/{}", req.bucket))
}

fn take_snapshot(st: &mut State, req: &Recorded, value: &str) -> Response {
    let Ok(name) = snapshot_request(value) else {
        return Response::error(400, "InvalidArgument", value);
    };
    match st.buckets.get(&req.bucket) {
        None => return Response::error(404, "NoSuchBucket", &req.bucket),
        Some(b) if !b.snapshots_enabled => {
            return Response::error(400, "InvalidRequest", &req.bucket);
        }
        Some(_) => {}
    }
    let Some(version) = st.freeze(&req.bucket, name.as_deref()) else {
        return Response::error(404, "NoSuchBucket", &req.bucket);
    };
    let resp = Response::new(200).with("location", format!("/{}", req.bucket));
    match st.snapshot_answer.clone() {
        None => resp.with("x-tigris-snapshot-version", version),
        Some(Some(other)) => resp.with("x-tigris-snapshot-version", other),
        Some(None) => resp,
    }
}

fn delete_bucket(st: &mut State, req: &Recorded) -> Response {
    let Some(b) = st.buckets.get(&req.bucket) else {
        return Response::error(404, "NoSuchBucket", &req.bucket);
    };
    if !b.objects.is_empty() && !truthy(req, "x-tigris-force-delete") {
        return Response::error(409, "BucketNotEmpty", &req.bucket);
    }
    st.buckets.remove(&req.bucket);
    Response::new(204)
}

fn list_objects(st: &State, req: &Recorded) -> Response {
    let Some(b) = st.buckets.get(&req.bucket) else {
        return Response::error(404, "NoSuchBucket", &req.bucket);
    };
    let prefix = req.query("prefix").unwrap_or_default();
    let delimiter = req.query("delimiter").unwrap_or_default();
    let max = req
        .query("max-keys")
        .and_then(|n| n.parse().ok())
        .unwrap_or(LIST_PAGE)
        .min(LIST_PAGE);
    // Where the previous page stopped: its last key or common prefix.
    let marker = req
        .query("continuation-token")
        .or(req.query("start-after"))
        .unwrap_or_default();
    let mut contents = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut last = String::new();
    let mut truncated = false;
    for (key, obj) in b.objects.range(prefix.to_string()..) {
        if !key.starts_with(prefix) {
            break;
        }
        let skipped = key.as_str() <= marker
            || (!delimiter.is_empty() && marker.ends_with(delimiter) && key.starts_with(marker));
        if skipped {
            continue;
        }
        let rest = &key[prefix.len()..];
        let common = match rest.find(delimiter) {
            Some(i) if !delimiter.is_empty() => {
                Some(format!("{prefix}{}", &rest[..i + delimiter.len()]))
            }
            _ => None,
        };
        if common.is_some() && prefixes.last() == common.as_ref() {
            continue;
        }
        if contents.len() + prefixes.len() == max {
            truncated = true;
            break;
        }
        match common {
            Some(p) => {
                last = p.clone();
                prefixes.push(p);
            }
            None => {
                last = key.clone();
                contents.push((key, obj));
            }
        }
    }
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>{}</Name><Prefix>{}</Prefix>\
         <KeyCount>{}</KeyCount><MaxKeys>{max}</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
        esc(&req.bucket),
        esc(prefix),
        contents.len() + prefixes.len(),
    );
    if !delimiter.is_empty() {
        xml.push_str(&format!("<Delimiter>{}</Delimiter>", esc(delimiter)));
    }
    if truncated {
        xml.push_str(&format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            esc(&last)
        ));
    }
    for (key, obj) in contents {
        xml.push_str(&format!(
            "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag>\
             <Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            esc(key),
            iso(obj.modified),
            esc(&obj.etag),
            obj.data.len()
        ));
    }
    for p in prefixes {
        xml.push_str(&format!(
            "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
            esc(&p)
        ));
    }
    xml.push_str("</ListBucketResult>");
    Response::xml(200, xml)
}

/// The `x-amz-meta-*` headers of a request, without the prefix.
fn user_meta(req: &Recorded) -> BTreeMap<String, String> {
    req.headers
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("x-amz-meta-")?.to_string(), v.clone())))
        .collect()
}

fn put_object(st: &mut State, req: &Recorded) -> Response {
    let obj = object(req.body.clone(), req.header("content-type"), user_meta(req));
    let etag = obj.etag.clone();
    if let Some(b) = st.buckets.get_mut(&req.bucket) {
        b.objects.insert(req.key.clone(), obj);
    }
    Response::new(200).with("etag", etag)
}

fn copy_object(st: &mut State, req: &Recorded) -> Response {
    let source = decode(req.header("x-amz-copy-source").unwrap_or_default());
    let source = source.trim_start_matches('/');
    let source = source.split_once("?versionId=").map_or(source, |(s, _)| s);
    let Some((src_bucket, src_key)) = source.split_once('/') else {
        return Response::error(400, "InvalidArgument", source);
    };
    let Some(found) = st
        .buckets
        .get(src_bucket)
        .and_then(|b| b.objects.get(src_key))
    else {
        return Response::error(404, "NoSuchKey", source);
    };
    let mut copy = found.clone();
    copy.modified = SystemTime::now();
    if req
        .header("x-amz-metadata-directive")
        .is_some_and(|d| d.eq_ignore_ascii_case("REPLACE"))
    {
        copy.meta = user_meta(req);
        if let Some(ct) = req.header("content-type") {
            copy.content_type = ct.to_string();
        }
    }
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyObjectResult>\
         <LastModified>{}</LastModified><ETag>{}</ETag></CopyObjectResult>",
        iso(copy.modified),
        esc(&copy.etag)
    );
    if truthy(req, "x-tigris-rename") && src_bucket == req.bucket {
        let (src_bucket, src_key) = (src_bucket.to_string(), src_key.to_string());
        if let Some(b) = st.buckets.get_mut(&src_bucket) {
            b.objects.remove(&src_key);
        }
    }
    if let Some(b) = st.buckets.get_mut(&req.bucket) {
        b.objects.insert(req.key.clone(), copy);
    }
    Response::xml(200, xml)
}

fn get_object(st: &State, req: &Recorded) -> Response {
    let Some(obj) = st.buckets[&req.bucket].objects.get(&req.key) else {
        return if req.method == "HEAD" {
            Response::new(404)
        } else {
            Response::error(404, "NoSuchKey", &req.key)
        };
    };
    let len = obj.data.len() as u64;
    let mut resp = Response::new(200)
        .with("content-type", obj.content_type.clone())
        .with("etag", obj.etag.clone())
        .with("last-modified", http_date(obj.modified))
        .with("accept-ranges", "bytes");
    for (k, v) in &obj.meta {
        resp = resp.with(&format!("x-amz-meta-{k}"), v.clone());
    }
    let range = req
        .header("range")
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
        .filter(|_| req.method == "GET");
    let Some((from, to)) = range else {
        return resp
            .with("content-length", len.to_string())
            .body(obj.data.clone());
    };
    let (start, end) = match (from.parse::<u64>(), to.parse::<u64>()) {
        (Ok(s), Ok(e)) => (s, e.min(len.saturating_sub(1))),
        (Ok(s), Err(_)) => (s, len.saturating_sub(1)),
        // A suffix range: the last `to` bytes.
        (Err(_), Ok(n)) => (len.saturating_sub(n), len.saturating_sub(1)),
        (Err(_), Err(_)) => return Response::error(400, "InvalidArgument", "range"),
    };
    if start >= len || start > end {
        return Response::error(416, "InvalidRange", &req.key)
            .with("content-range", format!("bytes */{len}"));
    }
    resp.status = 206;
    resp.with("content-range", format!("bytes {start}-{end}/{len}"))
        .with("content-length", (end - start + 1).to_string())
        .body(obj.data[start as usize..=end as usize].to_vec())
}
