//! Turning what hyper, h2, rustls and the OS report into a typed
//! [`TransportError`], with a hint where one helps (an unknown CA, a name mismatch).
//!
//! The classification walks the error's sources: a [`ConnectError`] says which connect stage
//! failed; a `rustls::Error` anywhere means TLS (TLS 1.3 servers reject a client certificate
//! only after the handshake, so that error arrives with the first read); `std::io::Error`
//! kinds tell refused, reset and timed-out connections apart; hyper says when a message was
//! incomplete (the connection closed before the response: client-go's "probable EOF").

use http::Method;

use super::connector::{ConnectError, ConnectStage};
use crate::error::{BoxError, TransportError, TransportErrorKind};

/// A failure of the HTTP/1.1 or HTTP/2 path, before or after the request was handed to a
/// connection; `E` is the protocol's error (hyper's or h2's).
#[derive(Debug)]
pub(crate) enum SendError<E> {
    /// Connecting failed (the connector's error, or the protocol handshake's).
    Connect(BoxError),
    /// The request failed on its connection.
    Request(E),
}

/// Classifies an error of either path for the request `method url`.
pub(crate) fn classify<E>(error: SendError<E>, method: &Method, url: &str) -> TransportError
where
    E: std::error::Error + Send + Sync + 'static,
{
    match error {
        SendError::Connect(error) => classify_boxed(error, true, method, url),
        SendError::Request(error) => classify_boxed(Box::new(error), false, method, url),
    }
}

/// Classifies `boxed`, which failed while connecting if `is_connect`.
fn classify_boxed(boxed: BoxError, is_connect: bool, method: &Method, url: &str) -> TransportError {
    let facts = Facts::of(boxed.as_ref());
    let kind = if let Some(stage) = facts.connect_stage {
        match stage {
            ConnectStage::Tls => TransportErrorKind::Tls,
            ConnectStage::TlsTimeout => TransportErrorKind::TlsHandshakeTimeout,
            ConnectStage::Tcp => match facts.io_kind {
                Some(std::io::ErrorKind::ConnectionRefused) => {
                    TransportErrorKind::ConnectionRefused
                }
                Some(std::io::ErrorKind::TimedOut) => TransportErrorKind::ConnectTimeout,
                _ if facts.text.contains("connect timeout") => TransportErrorKind::ConnectTimeout,
                _ => TransportErrorKind::Connect,
            },
        }
    } else if facts.rustls.is_some() || facts.tls_alert() {
        TransportErrorKind::Tls
    } else if is_connect {
        TransportErrorKind::Connect
    } else {
        use std::io::ErrorKind as Io;
        match facts.io_kind {
            Some(Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe) => {
                TransportErrorKind::ConnectionReset
            }
            Some(Io::UnexpectedEof) => TransportErrorKind::ConnectionClosed,
            _ if facts.refused => TransportErrorKind::StreamRefused,
            _ if facts.incomplete || facts.closed => TransportErrorKind::ConnectionClosed,
            _ if facts.hyper_timeout => TransportErrorKind::ConnectionClosed,
            _ if facts.hyper || facts.h2 => TransportErrorKind::Protocol,
            _ => TransportErrorKind::Other,
        }
    };
    let hint = match &facts.rustls {
        Some(error) => hint_for(error),
        None if facts.tls_alert() => alert_hint(&facts.text),
        None => None,
    };
    let mut transport = TransportError::new(kind, method.clone(), url, Some(boxed));
    if let Some(hint) = hint {
        transport = transport.with_detail(hint);
    }
    transport
}

#[derive(Default)]
struct Facts {
    connect_stage: Option<ConnectStage>,
    io_kind: Option<std::io::ErrorKind>,
    rustls: Option<rustls::Error>,
    incomplete: bool,
    closed: bool,
    /// The server refused the stream: the request was not processed.
    refused: bool,
    hyper_timeout: bool,
    hyper: bool,
    h2: bool,
    text: String,
}

impl Facts {
    /// Whether a TLS alert shows in the messages: HTTP/2 keeps only the text of the I/O
    /// errors it reports, so a rustls error seen through h2 has lost its type.
    fn tls_alert(&self) -> bool {
        self.text.contains("received fatal alert")
    }

    fn of(error: &(dyn std::error::Error + 'static)) -> Facts {
        let mut facts = Facts::default();
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
        let mut depth = 0;
        while let Some(e) = next {
            depth += 1;
            if depth > 32 {
                break;
            }
            facts.text.push_str(&e.to_string());
            facts.text.push('\n');
            if let Some(c) = e.downcast_ref::<ConnectError>() {
                facts.connect_stage.get_or_insert(c.stage);
            }
            if let Some(r) = e.downcast_ref::<rustls::Error>() {
                facts.rustls.get_or_insert_with(|| r.clone());
            }
            if let Some(h) = e.downcast_ref::<hyper::Error>() {
                facts.hyper = true;
                facts.incomplete |= h.is_incomplete_message();
                facts.closed |= h.is_closed() || h.is_canceled();
                facts.hyper_timeout |= h.is_timeout();
            }
            if let Some(h) = e.downcast_ref::<h2::Error>() {
                facts.h2 = true;
                // The server went away, or refused or cancelled the stream: the connection
                // (or this stream of it) closed before the response.
                facts.closed |= h.is_go_away()
                    || matches!(
                        h.reason(),
                        Some(h2::Reason::REFUSED_STREAM | h2::Reason::CANCEL)
                    );
                facts.refused |= h.is_remote() && h.reason() == Some(h2::Reason::REFUSED_STREAM);
                // h2 reports an I/O failure without a `source`: step into it.
                if let Some(io) = h.get_io() {
                    next = Some(io);
                    continue;
                }
            }
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if facts.io_kind.is_none() && io.kind() != std::io::ErrorKind::Other {
                    facts.io_kind = Some(io.kind());
                }
                // An io::Error's `source` skips the error it wraps: step into it.
                if let Some(inner) = io.get_ref() {
                    next = Some(inner);
                    continue;
                }
            }
            next = e.source();
        }
        facts
    }
}

fn alert_hint(text: &str) -> Option<String> {
    ["CertificateRequired", "BadCertificate", "UnknownCA"]
        .iter()
        .any(|alert| text.contains(alert))
        .then(|| CLIENT_CERT_HINT.to_owned())
}

const CLIENT_CERT_HINT: &str = "the server refused the client certificate (or needs one)";

fn hint_for(error: &rustls::Error) -> Option<String> {
    use rustls::CertificateError as C;
    match error {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => Some(
            "the server's certificate is signed by an authority this client does not trust \
             (check the CA of the configuration: certificate-authority(-data))"
                .to_owned(),
        ),
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => Some(
            "the server's certificate is not valid for the name the client checked \
             (the server URL's host, or tls-server-name when set)"
                .to_owned(),
        ),
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            Some("the server's certificate has expired".to_owned())
        }
        rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired)
        | rustls::Error::AlertReceived(rustls::AlertDescription::BadCertificate)
        | rustls::Error::AlertReceived(rustls::AlertDescription::UnknownCA) => {
            Some(CLIENT_CERT_HINT.to_owned())
        }
        _ => None,
    }
}
