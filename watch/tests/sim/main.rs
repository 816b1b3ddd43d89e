//! Watches of the REST client against apiserver-sim over real HTTP, TLS and a bearer token:
//! decoding the sim's watch streams (events, bookmarks, initial events, a clean timeout, each
//! injected stream fault), and the retry watcher across connection drops, cut and malformed
//! frames, stalls, refused requests and bookmarks, ending with Gone after a compaction.
//!
//! Waits are bounded; the real delays are the retry watcher's one-second restarts.

mod common;
mod decode;
mod retry;
