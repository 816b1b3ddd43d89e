//! Splits a protobuf watch body into its frames: each a 4-byte big-endian length, then that
//! many bytes (client-go's `framer.NewLengthDelimitedFrameReader`).
//!
//! Chunks are queued as they arrive; a frame that lies in one chunk is a zero-copy slice of
//! it, and only one split across chunks is assembled. A length above the cap is refused
//! before anything of the frame is buffered.

use std::collections::VecDeque;

use bytes::{Buf, Bytes, BytesMut};

use crate::FrameError;

/// Splits a body into length-prefixed frames.
#[derive(Debug)]
pub(crate) struct LengthFramer {
    chunks: VecDeque<Bytes>,
    /// Bytes queued in `chunks`.
    queued: usize,
    max_frame: usize,
}

impl LengthFramer {
    pub(crate) fn new(max_frame: usize) -> Self {
        LengthFramer {
            chunks: VecDeque::new(),
            queued: 0,
            max_frame,
        }
    }

    pub(crate) fn max_frame(&self) -> usize {
        self.max_frame
    }

    pub(crate) fn push(&mut self, chunk: Bytes) {
        if !chunk.is_empty() {
            self.queued += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// Whether part of a frame (its length, or some of its bytes) is waiting for more.
    pub(crate) fn in_frame(&self) -> bool {
        self.queued > 0
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.queued
    }

    /// Copies `n` queued bytes out (the caller knows they are there).
    fn take(&mut self, n: usize) -> Bytes {
        if n == 0 {
            return Bytes::new();
        }
        self.queued -= n;
        let front = self.chunks.front_mut().expect("queued bytes");
        if front.len() >= n {
            let frame = front.split_to(n);
            if front.is_empty() {
                self.chunks.pop_front();
            }
            return frame;
        }
        let mut frame = BytesMut::with_capacity(n);
        while frame.len() < n {
            let front = self.chunks.front_mut().expect("queued bytes");
            let part = front.len().min(n - frame.len());
            frame.extend_from_slice(&front[..part]);
            front.advance(part);
            if front.is_empty() {
                self.chunks.pop_front();
            }
        }
        frame.freeze()
    }

    /// The next whole frame, without its length; `None` until one has arrived.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        if self.queued < 4 {
            return Ok(None);
        }
        let mut prefix = [0u8; 4];
        let mut filled = 0;
        for chunk in &self.chunks {
            let part = chunk.len().min(4 - filled);
            prefix[filled..filled + part].copy_from_slice(&chunk[..part]);
            filled += part;
            if filled == 4 {
                break;
            }
        }
        let len = u32::from_be_bytes(prefix) as usize;
        if len > self.max_frame {
            return Err(FrameError::TooLarge {
                limit: self.max_frame,
            });
        }
        if self.queued < 4 + len {
            return Ok(None);
        }
        self.take(4);
        Ok(Some(self.take(len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(frames: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        for frame in frames {
            body.extend_from_slice(&(frame.len() as u32).to_be_bytes());
            body.extend_from_slice(frame);
        }
        body
    }

    #[test]
    fn frames_come_out_whole_however_the_body_is_cut() {
        let frames: [&[u8]; 3] = [b"first", b"", b"the third frame"];
        let body = framed(&frames);
        for cut in 1..=body.len() {
            let mut framer = LengthFramer::new(1 << 10);
            let mut out = Vec::new();
            for chunk in body.chunks(cut) {
                framer.push(Bytes::copy_from_slice(chunk));
                while let Some(frame) = framer.next_frame().unwrap() {
                    out.push(frame);
                }
            }
            assert_eq!(out, frames, "chunks of {cut}");
            assert!(!framer.in_frame());
        }
    }

    #[test]
    fn a_frame_in_one_chunk_is_not_copied() {
        let body = Bytes::from(framed(&[b"abc", b"def"]));
        let mut framer = LengthFramer::new(16);
        framer.push(body.clone());
        let frame = framer.next_frame().unwrap().unwrap();
        assert_eq!(frame.as_ptr(), body[4..].as_ptr());
    }

    #[test]
    fn a_length_over_the_cap_is_refused_before_its_bytes_arrive() {
        let mut framer = LengthFramer::new(16);
        framer.push(Bytes::from_static(&[0, 0, 0, 17]));
        assert!(matches!(
            framer.next_frame(),
            Err(FrameError::TooLarge { limit: 16 })
        ));
        let mut framer = LengthFramer::new(16);
        framer.push(Bytes::from_static(&[0, 0, 0, 5, b'a']));
        assert!(framer.next_frame().unwrap().is_none());
        assert!(framer.in_frame());
        assert_eq!(framer.pending_len(), 5);
    }
}
