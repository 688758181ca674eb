//! The HTTP side port (`--http-listen`), apart from SSH so probes and scrapers never touch
//! the SSH listener: `/healthz` (the process serves), `/readyz` (it takes new sessions;
//! fails from the moment a drain begins) and `/metrics` (Prometheus text format).
//!
//! HTTP/1.1 only, GET and HEAD only, a bounded number of connections each with a header
//! deadline: the port is meant for a cluster's probes and scraper, but must not be a way
//! to hold the process's resources if it is reachable by others.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Connections the side port serves at once: probes and a scraper need a handful; more
/// wait in the listen backlog.
const MAX_HTTP_CONNECTIONS: usize = 32;

/// Time a client has to send a request's headers; then its connection is closed.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How often histogram samples are folded into their buckets when nobody scrapes, so
/// they do not pile up in memory.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The Prometheus text exposition format's content type.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether the server takes new sessions: true from start-up until a drain begins.
#[derive(Debug)]
pub struct Health {
    ready: AtomicBool,
}

impl Health {
    pub fn new() -> Arc<Health> {
        Arc::new(Health {
            ready: AtomicBool::new(true),
        })
    }

    /// From now on `/readyz` fails: the server drains.
    pub fn set_draining(&self) {
        self.ready.store(false, Ordering::Release);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// What the side port answers from.
#[derive(Clone)]
pub struct Endpoints {
    pub health: Arc<Health>,
    /// `None`: `/metrics` answers 404 (no recorder could be installed).
    pub metrics: Option<PrometheusHandle>,
}

/// Serves the side port on `listener` until `stop` fires; connections open then are let
/// finish their request.
pub async fn serve(listener: TcpListener, endpoints: Endpoints, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_HTTP_CONNECTIONS));
    let tasks = TaskTracker::new();
    if let Some(handle) = endpoints.metrics.clone() {
        let stop = stop.clone();
        tasks.spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(UPKEEP_EVERY) => handle.run_upkeep(),
                }
            }
        });
    }
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, _) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "http accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let endpoints = endpoints.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let endpoints = endpoints.clone();
                async move { Ok::<_, Infallible>(answer(&req, &endpoints)) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "http connection ended with an error");
                    }
                }
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(HEADER_TIMEOUT, conn).await;
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    tasks.close();
    tasks.wait().await;
}

/// The answer to one request.
fn answer(req: &Request<Incoming>, endpoints: &Endpoints) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    }
    match req.uri().path() {
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" if endpoints.health.is_ready() => text(StatusCode::OK, "ready\n"),
        "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "draining\n"),
        "/metrics" => match &endpoints.metrics {
            Some(handle) => {
                handle.run_upkeep();
                let mut body = Vec::new();
                match handle.render_to_write(&mut body) {
                    Ok(()) => {
                        let mut resp = Response::new(Full::new(Bytes::from(body)));
                        resp.headers_mut()
                            .insert(CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS_TEXT));
                        resp
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot render the metrics");
                        text(StatusCode::INTERNAL_SERVER_ERROR, "cannot render metrics\n")
                    }
                }
            }
            None => text(StatusCode::NOT_FOUND, "no metrics in this process\n"),
        },
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
