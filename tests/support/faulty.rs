//! Test support: failure injection in front of an S3-compatible server.
//!
//! [`FaultyProxy`] is a small HTTP/1.1 proxy on 127.0.0.1 that forwards every request to the
//! real server, except uploads of objects whose key contains one of its markers: PutObject
//! (and CopyObject, which is a PUT too), UploadPart and CompleteMultipartUpload. Those get the
//! rule's error status with an S3 error body, every time they are tried, so the store's
//! retries cannot get past them: the fault is persistent, as with a broken or denying store.
//! Everything else (reads, lists, deletes, starting and aborting multipart uploads) goes
//! through untouched.
//!
//! Each connection carries one request: the proxy asks the server to close after answering
//! and tells the client the same, so it never has to track keep-alive framing of responses.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Requests whose target contains `marker` that upload data are answered with `status`.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub marker: &'static str,
    /// 500 (the store retries it, then gives up) or 403 (not retried).
    pub status: u16,
}

/// One request the proxy refused: method and target (`PUT /bucket/key?partNumber=1&...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub method: String,
    pub target: String,
    pub status: u16,
}

pub struct FaultyProxy {
    pub port: u16,
    refused: Arc<Mutex<Vec<Refused>>>,
    stop: Arc<AtomicBool>,
}

impl FaultyProxy {
    /// Starts a proxy to `upstream_port` on 127.0.0.1 applying `rules`.
    pub fn start(upstream_port: u16, rules: &[Rule]) -> FaultyProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let refused = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let rules = rules.to_vec();
        {
            let refused = refused.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let rules = rules.clone();
                    let refused = refused.clone();
                    std::thread::spawn(move || {
                        // A client that goes away mid-request is no concern of the tests.
                        let _ = serve(conn, upstream_port, &rules, &refused);
                    });
                }
            });
        }
        FaultyProxy {
            port,
            refused,
            stop,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests refused so far.
    pub fn refused(&self) -> Vec<Refused> {
        self.refused.lock().unwrap().clone()
    }
}

impl Drop for FaultyProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A request or response head: the first line and the header lines.
struct Head {
    first: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn read(r: &mut impl BufRead) -> io::Result<Option<Head>> {
        let mut first = String::new();
        if r.read_line(&mut first)? == 0 {
            return Ok(None);
        }
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line)? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        Ok(Some(Head {
            first: first.trim_end_matches(['\r', '\n']).to_string(),
            headers,
        }))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The head as sent on the wire, with `Connection: close` and without `drop` headers.
    fn encode(&self, drop: &[&str]) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.first);
        for (k, v) in &self.headers {
            if k.eq_ignore_ascii_case("connection")
                || k.eq_ignore_ascii_case("keep-alive")
                || drop.iter().any(|d| k.eq_ignore_ascii_case(d))
            {
                continue;
            }
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("Connection: close\r\n\r\n");
        out.into_bytes()
    }
}

/// Copies one request body (by `Content-Length`, or chunked) from `from` to `to`.
fn copy_body(head: &Head, from: &mut impl BufRead, to: &mut impl Write) -> io::Result<()> {
    let chunked = head
        .get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        loop {
            let mut size_line = String::new();
            from.read_line(&mut size_line)?;
            to.write_all(size_line.as_bytes())?;
            let size =
                usize::from_str_radix(size_line.trim().split(';').next().unwrap_or_default(), 16)
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    let mut line = String::new();
                    from.read_line(&mut line)?;
                    to.write_all(line.as_bytes())?;
                    if line.trim().is_empty() {
                        return Ok(());
                    }
                }
            }
            // The chunk and its CRLF.
            io::copy(&mut from.take(size as u64 + 2), to)?;
        }
    }
    let len: u64 = head
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    io::copy(&mut from.take(len), to)?;
    Ok(())
}

/// True when the request uploads object data: PutObject, CopyObject, UploadPart (PUT) or
/// CompleteMultipartUpload (POST with an upload id).
fn uploads(method: &str, target: &str) -> bool {
    method == "PUT" || (method == "POST" && target.contains("uploadId="))
}

fn serve(
    client: TcpStream,
    upstream_port: u16,
    rules: &[Rule],
    refused: &Mutex<Vec<Refused>>,
) -> io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut client_w = client;
    let Some(head) = Head::read(&mut reader)? else {
        return Ok(());
    };
    let mut parts = head.first.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    if head
        .get("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        client_w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let rule = rules
        .iter()
        .find(|r| target.contains(r.marker))
        .filter(|_| uploads(&method, &target));
    if let Some(rule) = rule {
        copy_body(&head, &mut reader, &mut io::sink())?;
        refused.lock().unwrap().push(Refused {
            method,
            target,
            status: rule.status,
        });
        let (code, reason) = match rule.status {
            403 => ("AccessDenied", "Forbidden"),
            503 => ("ServiceUnavailable", "Service Unavailable"),
            _ => ("InternalError", "Internal Server Error"),
        };
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
             <Message>injected by the test proxy</Message></Error>"
        );
        let resp = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            rule.status,
            body.len()
        );
        client_w.write_all(resp.as_bytes())?;
        let _ = client_w.shutdown(Shutdown::Both);
        return Ok(());
    }
    let upstream = TcpStream::connect(("127.0.0.1", upstream_port))?;
    let mut up_w = upstream.try_clone()?;
    up_w.write_all(&head.encode(&["expect"]))?;
    copy_body(&head, &mut reader, &mut up_w)?;
    let mut up_r = BufReader::new(upstream);
    let Some(resp) = Head::read(&mut up_r)? else {
        return Ok(());
    };
    client_w.write_all(&resp.encode(&[]))?;
    // The server closes after this response, so its end is the body's end.
    io::copy(&mut up_r, &mut client_w)?;
    let _ = client_w.shutdown(Shutdown::Both);
    Ok(())
}
