//! Test bodies: scripted chunks, then an end, a failure or silence.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame};

/// A body made of given chunks, then an end, an error, or silence.
pub struct Chunks {
    chunks: VecDeque<Bytes>,
    then: Then,
}

#[derive(Clone, Copy, Debug)]
pub enum Then {
    End,
    Fail,
    Hang,
}

impl Chunks {
    pub fn new(chunks: impl IntoIterator<Item = Bytes>, then: Then) -> Self {
        Self {
            chunks: chunks.into_iter().collect(),
            then,
        }
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        match self.then {
            Then::End => Poll::Ready(None),
            Then::Fail => Poll::Ready(Some(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset by peer",
            )))),
            Then::Hang => Poll::Pending,
        }
    }
}
