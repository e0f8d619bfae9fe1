//! The filtering proxy: hyper 1.x HTTP/1 server on the unix socket, one
//! current-thread tokio runtime on its own thread.
//!
//! hyper parses requests (absolute-form URIs, CONNECT authority-form, framing,
//! keep-alive) so we do not hand-roll an HTTP parser on an attacker-facing
//! socket; CONNECT uses hyper's upgrade, after which we own the raw stream and
//! peek at the ClientHello ourselves. Plain GET/HEAD are forwarded with a hyper
//! client connection per request (no pooling: each request is resolved, checked
//! and connected on its own, so no earlier answer is reused for a later name).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Semaphore};

use super::allowlist::{self, Allowlist, Kind};
use super::report::{Book, ByteCounters, ProxyReport, Ticket, Verdict};
use super::resolve::{ResolveError, Resolver};
use super::sni::{self, Peek, RecordCheck};
use super::{NetConfig, NetError};

type Body = BoxBody<Bytes, hyper::Error>;

/// Client connections served at once; more are closed on accept. pip uses a
/// handful; this only bounds what a hostile payload can make us hold.
pub const MAX_CONNECTIONS: usize = 64;

/// The per-run byte budget, shared by every upstream connection. Reads and
/// writes reserve before they move bytes and give back what they did not use,
/// so the total never exceeds `max`, even with connections in parallel.
struct Budget {
    used: AtomicU64,
    max: u64,
}

impl Budget {
    fn reserve(&self, want: usize) -> usize {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            let grant = self.max.saturating_sub(cur).min(want as u64);
            if grant == 0 {
                return 0;
            }
            match self.used.compare_exchange_weak(
                cur,
                cur + grant,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return grant as usize,
                Err(actual) => cur = actual,
            }
        }
    }
    fn refund(&self, n: usize) {
        if n > 0 {
            self.used.fetch_sub(n as u64, Ordering::AcqRel);
        }
    }
}

struct State {
    allow: Allowlist,
    resolver: Resolver,
    book: Book,
    requests: AtomicU64,
    max_requests: u64,
    budget: Arc<Budget>,
    connect_timeout: Duration,
    idle_timeout: Duration,
}

/// The running proxy thread.
pub struct Handle {
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    book: Book,
}

/// Spawns the proxy thread; returns once it is accepting.
pub fn spawn(
    cfg: NetConfig,
    listener: std::os::unix::net::UnixListener,
) -> Result<Handle, NetError> {
    let allow = Allowlist::parse(&cfg.allow)?;
    listener
        .set_nonblocking(true)
        .map_err(|e| NetError::Start(format!("set listener non-blocking: {e}")))?;
    let book = Book::default();
    let state = Arc::new(State {
        allow,
        resolver: Resolver::new(&cfg.test_resolve),
        book: book.clone(),
        requests: AtomicU64::new(0),
        max_requests: u64::from(cfg.max_requests),
        budget: Arc::new(Budget {
            used: AtomicU64::new(0),
            max: cfg.max_bytes,
        }),
        connect_timeout: Duration::from_millis(cfg.connect_timeout_ms),
        idle_timeout: Duration::from_millis(cfg.idle_timeout_ms),
    });
    let (stop_tx, stop_rx) = oneshot::channel();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let thread = std::thread::Builder::new()
        .name("maibox-proxy".into())
        .spawn(move || proxy_thread(listener, state, stop_rx, ready_tx))
        .map_err(|e| NetError::Start(format!("spawn proxy thread: {e}")))?;
    let mut handle = Handle {
        shutdown: Some(stop_tx),
        thread: Some(thread),
        book,
    };
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(why)) => {
            handle.join();
            Err(NetError::Start(why))
        }
        Err(_) => {
            let err = handle
                .join()
                .unwrap_or_else(|| "proxy thread exited before it was ready".into());
            Err(NetError::Start(err))
        }
    }
}

/// The proxy thread's body: a current-thread runtime serving `listener` until `stop`,
/// after it has said on `ready` whether it could start.
fn proxy_thread(
    listener: std::os::unix::net::UnixListener,
    state: Arc<State>,
    stop: oneshot::Receiver<()>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("build runtime: {e}")));
            return;
        }
    };
    rt.block_on(async move {
        let listener = match tokio::net::UnixListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(format!("register listener: {e}")));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        serve(listener, state, stop).await;
    });
    // Blocking DNS lookups may still be running; do not wait on them.
    rt.shutdown_timeout(Duration::from_millis(200));
}

impl Handle {
    fn join(&mut self) -> Option<String> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.thread.take().map(|t| t.join()) {
            Some(Err(_)) => Some("proxy thread panicked".into()),
            _ => None,
        }
    }

    pub fn stop(mut self) -> ProxyReport {
        let errors = self.join().into_iter().collect();
        self.book.report(errors)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Forgetting `stop` must still end the thread and its connections.
        self.join();
    }
}

async fn serve(
    listener: tokio::net::UnixListener,
    state: Arc<State>,
    mut stop: oneshot::Receiver<()>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let Ok(permit) = slots.clone().try_acquire_owned() else { continue };
                    let state = state.clone();
                    tokio::spawn(async move {
                        serve_connection(stream, state).await;
                        drop(permit);
                    });
                }
                // Transient (EMFILE, aborted connection): back off briefly.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }
}

async fn serve_connection(stream: tokio::net::UnixStream, state: Arc<State>) {
    let idle = state.idle_timeout;
    let svc = service_fn(move |req| {
        let state = state.clone();
        async move { Ok::<_, Infallible>(handle(state, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(stream), svc)
        .with_upgrades();
    let _ = conn.await;
}

fn text(status: StatusCode, msg: String) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(msg + "\n"))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("text/plain"));
    r
}

fn refused(ticket: &Ticket, reason: String) -> Response<Body> {
    ticket.refuse(reason.clone());
    text(
        StatusCode::FORBIDDEN,
        format!("maibox proxy refused: {reason}"),
    )
}

/// An allowed request the upstream side could not carry out: noted on the ticket
/// (not a refusal), answered 502.
fn bad_gateway(ticket: &Ticket, why: String) -> Response<Body> {
    ticket.note(why.clone());
    text(StatusCode::BAD_GATEWAY, format!("maibox proxy: {why}"))
}

async fn handle(state: Arc<State>, req: Request<hyper::body::Incoming>) -> Response<Body> {
    let method = req.method().clone();
    let kind = if method == Method::CONNECT {
        Kind::Connect
    } else {
        Kind::PlainHttp
    };
    let default_port = if kind == Kind::Connect { 0 } else { 80 };
    let (host_raw, port) = match req.uri().authority() {
        Some(a) => (a.host().to_string(), a.port_u16().unwrap_or(default_port)),
        None => (String::new(), 0),
    };
    let ticket = state
        .book
        .open(&host_raw, port, method.as_str(), Verdict::Allowed, None);
    let n = state.requests.fetch_add(1, Ordering::SeqCst) + 1;
    if n > state.max_requests {
        return refused(
            &ticket,
            format!("request limit ({}) reached", state.max_requests),
        );
    }
    match kind {
        Kind::Connect => connect(state, req, ticket, host_raw, port).await,
        Kind::PlainHttp => plain(state, req, ticket, host_raw, port).await,
    }
}

/// The policy checks common to both kinds; returns the normalized host.
fn check_target(state: &State, host_raw: &str, port: u16, kind: Kind) -> Result<String, String> {
    if host_raw.is_empty() {
        return Err("no target host".into());
    }
    let unbracketed = host_raw.trim_start_matches('[').trim_end_matches(']');
    if unbracketed.parse::<std::net::IpAddr>().is_ok() || allowlist::looks_numeric(unbracketed) {
        return Err(format!("IP-literal target {host_raw}"));
    }
    let host = allowlist::normalize_host(host_raw);
    if allowlist::name_syntax_error(&host).is_some() {
        return Err(format!("invalid host name {host_raw:?}"));
    }
    if port == 0 {
        return Err("no target port".into());
    }
    if !state.allow.allows(&host, port, kind) {
        return Err(format!("{host}:{port} is not in the allowlist"));
    }
    Ok(host)
}

/// Resolves, checks and connects, all within the connect timeout. Connects
/// only to the exact addresses the resolver checked.
async fn open_upstream(
    state: &State,
    host: &str,
    port: u16,
) -> Result<(TcpStream, SocketAddr), Upstream> {
    let attempt = async {
        let addrs = state
            .resolver
            .resolve(host, port)
            .await
            .map_err(Upstream::Resolve)?;
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => return Ok((s, addr)),
                Err(e) => last = Some(format!("connect {addr}: {e}")),
            }
        }
        Err(Upstream::Failed(
            last.unwrap_or_else(|| "no address".into()),
        ))
    };
    match tokio::time::timeout(state.connect_timeout, attempt).await {
        Ok(r) => r,
        Err(_) => Err(Upstream::Failed(format!(
            "connect timeout ({} ms)",
            state.connect_timeout.as_millis()
        ))),
    }
}

/// The checked host and an open connection to it, its address on the ticket;
/// or the response that refuses it (the policy's 403, or the 502 of a lookup or
/// connect that failed). Nothing is sent upstream here.
async fn reach(
    state: &State,
    ticket: &Ticket,
    host_raw: &str,
    port: u16,
    kind: Kind,
) -> Result<(String, TcpStream), Response<Body>> {
    let host = check_target(state, host_raw, port, kind).map_err(|why| refused(ticket, why))?;
    let (stream, addr) = open_upstream(state, &host, port)
        .await
        .map_err(|e| upstream_error(ticket, e))?;
    ticket.set_address(addr);
    Ok((host, stream))
}

enum Upstream {
    Resolve(ResolveError),
    Failed(String),
}

/// Maps an upstream failure to the client's response and the record: a refused
/// address is a policy refusal; a lookup or connect failure is an allowed
/// request that could not be carried out.
fn upstream_error(ticket: &Ticket, err: Upstream) -> Response<Body> {
    match err {
        Upstream::Resolve(e @ ResolveError::Refused { .. }) => refused(ticket, e.to_string()),
        Upstream::Resolve(e) => bad_gateway(ticket, e.to_string()),
        Upstream::Failed(e) => bad_gateway(ticket, e),
    }
}

async fn connect(
    state: Arc<State>,
    req: Request<hyper::body::Incoming>,
    ticket: Ticket,
    host_raw: String,
    port: u16,
) -> Response<Body> {
    // Resolve and check before answering 200, so that a name resolving to a
    // refused address is a visible 403 rather than a dead tunnel.
    let (host, upstream) = match reach(&state, &ticket, &host_raw, port, Kind::Connect).await {
        Ok(x) => x,
        Err(response) => return response,
    };
    tokio::spawn(async move {
        let client = match hyper::upgrade::on(req).await {
            Ok(u) => TokioIo::new(u),
            Err(e) => return ticket.note(format!("upgrade failed: {e}")),
        };
        if let Err(end) = tunnel(&state, client, upstream, &host, &ticket).await {
            match end {
                TunnelEnd::Policy(why) => ticket.refuse(why),
                TunnelEnd::Io(why) => ticket.note(why),
            }
        }
    });
    Response::new(Empty::new().map_err(|never| match never {}).boxed())
}

enum TunnelEnd {
    Policy(String),
    Io(String),
}

async fn tunnel<C>(
    state: &State,
    mut client: C,
    upstream: TcpStream,
    host: &str,
    ticket: &Ticket,
) -> Result<(), TunnelEnd>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    // The upstream connection is already open but nothing has been sent on it:
    // a refused SNI means the upstream sees a connect and a close, no data.
    let mut buf = Vec::with_capacity(4096);
    let consumed = loop {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(state.idle_timeout, client.read(&mut chunk))
            .await
            .map_err(|_| TunnelEnd::Io("timeout waiting for ClientHello".into()))?
            .map_err(|e| TunnelEnd::Io(format!("read ClientHello: {e}")))?;
        if n == 0 {
            return Err(TunnelEnd::Policy(
                "tunnel closed before a complete ClientHello".into(),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        match sni::peek_client_hello(&buf) {
            Ok(Peek::NeedMore) => continue,
            Ok(Peek::Done { sni, consumed }) => {
                if sni != host {
                    return Err(TunnelEnd::Policy(format!(
                        "SNI {sni} does not match CONNECT host {host}"
                    )));
                }
                break consumed;
            }
            Err(e) => return Err(TunnelEnd::Policy(e.to_string())),
        }
    };
    let mut check = RecordCheck::default();
    check
        .feed(&buf[consumed..])
        .map_err(|e| TunnelEnd::Policy(format!("after ClientHello: {e}")))?;

    let limit_hit = Arc::new(AtomicBool::new(false));
    let mut upstream = Counted::new(upstream, state, ticket.bytes.clone(), limit_hit.clone());
    let result = async {
        upstream
            .write_all(&buf)
            .await
            .map_err(|e| TunnelEnd::Io(format!("write upstream: {e}")))?;
        pump(client, upstream, check, state.idle_timeout).await
    }
    .await;
    if limit_hit.load(Ordering::Relaxed) {
        return Err(TunnelEnd::Io("byte limit reached".into()));
    }
    result
}

/// Copies both ways until both sides close, checking TLS framing client-to-server,
/// and ends the tunnel when neither side has moved a byte for `idle`.
async fn pump<C, U>(
    client: C,
    upstream: U,
    mut check: RecordCheck,
    idle: Duration,
) -> Result<(), TunnelEnd>
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let touch = || last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
    let (cr, cw) = tokio::io::split(client);
    let (ur, uw) = tokio::io::split(upstream);
    let up = copy_until_closed(cr, uw, ("client", "upstream"), |b: &[u8]| {
        check
            .feed(b)
            .map_err(|e| TunnelEnd::Policy(format!("after ClientHello: {e}")))?;
        touch();
        Ok(())
    });
    let down = copy_until_closed(ur, cw, ("upstream", "client"), |_: &[u8]| {
        touch();
        Ok(())
    });
    let watchdog = idle_watch(start, &last, idle);
    tokio::select! {
        r = async { tokio::try_join!(up, down) } => r.map(|_| ()),
        r = watchdog => r,
    }
}

/// Copies `from` to `to` until `from` ends, then shuts `to`'s write side. `seen`
/// checks each chunk before it is written; `ends` names the two sides in errors.
async fn copy_until_closed<R, W>(
    mut from: R,
    mut to: W,
    ends: (&str, &str),
    mut seen: impl FnMut(&[u8]) -> Result<(), TunnelEnd>,
) -> Result<(), TunnelEnd>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut b = vec![0u8; 16 * 1024];
    loop {
        let n = from
            .read(&mut b)
            .await
            .map_err(|e| TunnelEnd::Io(format!("read {}: {e}", ends.0)))?;
        if n == 0 {
            let _ = to.shutdown().await;
            return Ok(());
        }
        seen(&b[..n])?;
        to.write_all(&b[..n])
            .await
            .map_err(|e| TunnelEnd::Io(format!("write {}: {e}", ends.1)))?;
    }
}

/// Ends with an error once no byte has moved for `idle` (`last` is the time of the
/// last byte, in ms since `start`).
async fn idle_watch(start: Instant, last: &AtomicU64, idle: Duration) -> Result<(), TunnelEnd> {
    let tick = (idle / 4).max(Duration::from_millis(50));
    loop {
        tokio::time::sleep(tick).await;
        let quiet = start.elapsed().as_millis() as u64 - last.load(Ordering::Relaxed);
        if quiet > idle.as_millis() as u64 {
            return Err(TunnelEnd::Io(format!(
                "idle timeout ({} ms)",
                idle.as_millis()
            )));
        }
    }
}

/// Headers that belong to one hop and are never forwarded (RFC 9110 7.6.1),
/// plus `Expect` (no bodies are forwarded) and `Host` (rewritten from the URI).
const HOP_BY_HOP: [&str; 11] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "host",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for h in named {
        headers.remove(h);
    }
    for h in HOP_BY_HOP {
        headers.remove(h);
    }
}

async fn plain(
    state: Arc<State>,
    req: Request<hyper::body::Incoming>,
    ticket: Ticket,
    host_raw: String,
    port: u16,
) -> Response<Body> {
    if let Err(why) = plain_allowed(&req) {
        return refused(&ticket, why);
    }
    let (host, stream) = match reach(&state, &ticket, &host_raw, port, Kind::PlainHttp).await {
        Ok(x) => x,
        Err(response) => return response,
    };
    let out = match upstream_request(&req, &host, port) {
        Ok(r) => r,
        Err(why) => return refused(&ticket, why),
    };
    forward(state, stream, out, ticket).await
}

/// Only GET and HEAD of an absolute http:// URI, without a body.
fn plain_allowed(req: &Request<hyper::body::Incoming>) -> Result<(), String> {
    let method = req.method();
    if method != Method::GET && method != Method::HEAD {
        return Err(format!(
            "method {method} not allowed (only GET and HEAD, and CONNECT for TLS)"
        ));
    }
    match req.uri().scheme_str() {
        Some("http") => {}
        Some(other) => {
            return Err(format!(
                "scheme {other} in a plain request (use CONNECT for https)"
            ))
        }
        None => {
            return Err("not a proxy request: the URI must be absolute (http://host/...)".into())
        }
    }
    let has_body = req.headers().contains_key(TRANSFER_ENCODING)
        || req
            .headers()
            .get(CONTENT_LENGTH)
            .is_some_and(|v| v.to_str().map(|s| s.trim() != "0").unwrap_or(true));
    if has_body {
        return Err("request body not allowed".into());
    }
    Ok(())
}

/// The request as the upstream gets it: its path, its headers without hop-by-hop
/// ones, and the checked host.
fn upstream_request(
    req: &Request<hyper::body::Incoming>,
    host: &str,
    port: u16,
) -> Result<Request<Empty<Bytes>>, String> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty())
        .unwrap_or("/");
    let mut headers = req.headers().clone();
    strip_hop_by_hop(&mut headers);
    let host_header = if port == 80 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    };
    let mut out = Request::builder()
        .method(req.method().clone())
        .uri(path)
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("cannot rebuild request: {e}"))?;
    *out.headers_mut() = headers;
    let v = HeaderValue::from_str(&host_header).map_err(|e| format!("bad host header: {e}"))?;
    out.headers_mut().insert(HOST, v);
    Ok(out)
}

/// Sends `out` on `stream`, counting its bytes against the run's budget, and streams
/// the response back.
async fn forward(
    state: Arc<State>,
    stream: TcpStream,
    out: Request<Empty<Bytes>>,
    ticket: Ticket,
) -> Response<Body> {
    let limit_hit = Arc::new(AtomicBool::new(false));
    let io = TokioIo::new(Counted::new(
        stream,
        &state,
        ticket.bytes.clone(),
        limit_hit.clone(),
    ));
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(io).await {
        Ok(x) => x,
        Err(e) => {
            ticket.note(format!("upstream handshake: {e}"));
            return text(
                StatusCode::BAD_GATEWAY,
                format!("maibox proxy: upstream: {e}"),
            );
        }
    };
    let conn_ticket_note = {
        let limit_hit = limit_hit.clone();
        move |r: Result<(), hyper::Error>| {
            if limit_hit.load(Ordering::Relaxed) {
                Some("byte limit reached".to_string())
            } else {
                r.err().map(|e| format!("upstream connection: {e}"))
            }
        }
    };
    let (done_tx, done_rx) = oneshot::channel::<Option<String>>();
    tokio::spawn(async move {
        let _ = done_tx.send(conn_ticket_note(conn.await));
    });
    let resp = match upstream_response(&state, &mut sender, out, &limit_hit, &ticket).await {
        Ok(r) => r,
        Err(answer) => return answer,
    };
    // Record how the upstream connection ended (e.g. cut by the byte limit)
    // once the body has been streamed, without holding up the response.
    tokio::spawn(async move {
        if let Ok(Some(why)) = done_rx.await {
            ticket.note(why);
        }
    });
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        return text(
            StatusCode::BAD_GATEWAY,
            "maibox proxy: upstream tried to switch protocols".into(),
        );
    }
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Response::from_parts(parts, body.boxed())
}

/// The upstream's response head, or the proxy's own answer (noted on the ticket) when
/// the upstream failed, hit the byte limit or did not answer within the idle timeout.
async fn upstream_response(
    state: &State,
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    out: Request<Empty<Bytes>>,
    limit_hit: &AtomicBool,
    ticket: &Ticket,
) -> Result<Response<hyper::body::Incoming>, Response<Body>> {
    match tokio::time::timeout(state.idle_timeout, sender.send_request(out)).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => {
            let why = if limit_hit.load(Ordering::Relaxed) {
                "byte limit reached".into()
            } else {
                format!("upstream: {e}")
            };
            Err(bad_gateway(ticket, why))
        }
        Err(_) => {
            ticket.note("timeout waiting for upstream response".into());
            Err(text(
                StatusCode::GATEWAY_TIMEOUT,
                "maibox proxy: upstream timeout".into(),
            ))
        }
    }
}

/// An upstream stream that counts bytes each way into the request's record and
/// draws them from the run's budget; past the budget reads and writes fail.
struct Counted<T> {
    inner: T,
    budget: Arc<Budget>,
    bytes: Arc<ByteCounters>,
    limit_hit: Arc<AtomicBool>,
}

impl<T> Counted<T> {
    fn new(inner: T, state: &State, bytes: Arc<ByteCounters>, limit_hit: Arc<AtomicBool>) -> Self {
        Counted {
            inner,
            budget: state.budget.clone(),
            bytes,
            limit_hit,
        }
    }

    fn exhausted(&self) -> io::Error {
        self.limit_hit.store(true, Ordering::Relaxed);
        io::Error::other("maibox proxy: byte limit reached")
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let grant = this.budget.reserve(buf.remaining());
        if grant == 0 {
            return Poll::Ready(Err(this.exhausted()));
        }
        // Read into at most `grant` bytes so the budget is exact.
        let dst = buf.initialize_unfilled_to(grant);
        let mut sub = ReadBuf::new(dst);
        let res = Pin::new(&mut this.inner).poll_read(cx, &mut sub);
        let n = match res {
            Poll::Ready(Ok(())) => sub.filled().len(),
            _ => 0,
        };
        this.budget.refund(grant - n);
        if let Poll::Ready(Ok(())) = res {
            this.bytes.down.fetch_add(n as u64, Ordering::Relaxed);
            buf.advance(n);
        }
        res
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if data.is_empty() {
            return Pin::new(&mut this.inner).poll_write(cx, data);
        }
        let grant = this.budget.reserve(data.len());
        if grant == 0 {
            return Poll::Ready(Err(this.exhausted()));
        }
        let res = Pin::new(&mut this.inner).poll_write(cx, &data[..grant]);
        let n = match res {
            Poll::Ready(Ok(n)) => n,
            _ => 0,
        };
        this.budget.refund(grant - n);
        this.bytes.up.fetch_add(n as u64, Ordering::Relaxed);
        res
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
