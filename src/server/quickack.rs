//! Acknowledging a client's packets at once instead of after the delayed-ACK timer.
//!
//! An SSH client writes its key-exchange packets back to back: `KEXINIT`, then, as soon as
//! the server's `KEXINIT` has arrived, the small `KEX_ECDH_INIT`. OpenSSH's client leaves
//! Nagle's algorithm on for sessions without a terminal, so that second, small write waits
//! in the client until the server has acknowledged the first. The server has nothing to
//! say at that moment (its own `KEXINIT` is already sent), so Linux delays the ACK by up to
//! 40 ms — and a whole `ssh host 'echo hi'` spends most of its time in that wait. The same
//! happens whenever a client sends two small packets in a row (a channel request and its
//! data). Quick-ACK mode makes the kernel acknowledge at once; Linux leaves the mode on its
//! own again, so it is re-armed after every read.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A TCP stream that keeps the socket in quick-ACK mode.
pub struct QuickAck {
    inner: TcpStream,
}

impl QuickAck {
    /// Wraps `inner`, arming quick-ACK mode for the first packets.
    pub fn new(inner: TcpStream) -> QuickAck {
        let stream = QuickAck { inner };
        stream.arm();
        stream
    }

    #[cfg(target_os = "linux")]
    fn arm(&self) {
        // Failing only costs latency; nothing to report.
        let _ = socket2::SockRef::from(&self.inner).set_tcp_quickack(true);
    }

    #[cfg(not(target_os = "linux"))]
    fn arm(&self) {}
}

impl AsyncRead for QuickAck {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.arm();
        }
        r
    }
}

impl AsyncWrite for QuickAck {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The wrapper passes bytes through unchanged both ways, and after a request-reply
    /// exchange (which puts a plain socket into delayed-ACK mode) a read leaves the socket
    /// in quick-ACK mode again.
    #[tokio::test]
    async fn passes_bytes_and_keeps_quickack_armed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            let mut back = [0u8; 4];
            for _ in 0..3 {
                c.write_all(b"ping").await.unwrap();
                c.read_exact(&mut back).await.unwrap();
            }
            c.write_all(b"last").await.unwrap();
            back
        });
        let (accepted, _) = listener.accept().await.unwrap();
        let mut s = QuickAck::new(accepted);
        let mut got = [0u8; 4];
        for _ in 0..3 {
            s.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"ping");
            s.write_all(b"pong").await.unwrap();
        }
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"last");
        #[cfg(target_os = "linux")]
        assert!(
            socket2::SockRef::from(&s.inner).tcp_quickack().unwrap(),
            "quick-ACK mode is re-armed after a read"
        );
        assert_eq!(&client.await.unwrap(), b"pong");
    }
}
