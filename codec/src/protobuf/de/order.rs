//! Whether the messages of a decode are checked for their field order before they are walked.
//!
//! gogo-protobuf writes a message's fields by ascending number, and kube-apiserver's answers
//! always come so. A message in that order is walked once, a run of equal numbers at a time.
//! One whose numbers go down somewhere must be read field by field instead (each field of the
//! schema gathered from anywhere in it), and which way to read it has to be known before its
//! first member is handed to the type. Checking every message first is a second pass over
//! its fields: about a sixth of a decode (`rich.pb` into a type that reads every value: 4.1
//! to 4.4 us with the check, 3.6 to 3.8 without).
//!
//! So a decode first assumes the order and walks each message once. A message found out of
//! order on the way fails the decode and marks it; the entry point ([`in_order`]) then
//! decodes again from the start with every message checked first, as each was read before
//! this assumption was made, and gives that decode's result. The mark is kept beside the
//! error, not in it: a type whose `Deserialize` swallows an error (a `deserialize_with` that
//! falls back to a default) would otherwise turn a message out of order into a silently
//! different object.
//!
//! client-go's generated `Unmarshal` code reads fields in any order in one pass, each into its
//! Go field. A serde type is handed members one by one and may not take a field twice, which
//! is why the order matters here at all.
//!
//! The state is per thread (a decode is synchronous and never leaves its thread), set by
//! [`in_order`] for the decode it runs and put back as it was when it returns or unwinds, so a
//! decode nested in another's `Deserialize` leaves the outer one's state alone.

use std::cell::Cell;

use crate::protobuf::ProtobufError;

#[derive(Clone, Copy)]
struct State {
    /// Every message is checked before it is walked.
    check: bool,
    /// A message of the decode under way was found out of order.
    descended: bool,
}

/// A decode's state at its start: the order assumed, nothing found out of order yet.
const FRESH: State = State {
    check: false,
    descended: false,
};

thread_local! {
    static STATE: Cell<State> = const { Cell::new(FRESH) };
}

/// Whether the messages of the decode under way are checked before they are walked.
pub(super) fn checking() -> bool {
    STATE.with(|state| state.get().check)
}

/// Marks the decode under way as having met a message out of order, and gives the error that
/// ends it (never seen outside: [`in_order`] decodes again).
pub(super) fn out_of_order() -> ProtobufError {
    STATE.with(|state| {
        state.set(State {
            descended: true,
            ..state.get()
        })
    });
    ProtobufError::custom_redacted("a message's fields are out of order")
}

/// Runs `decode` assuming every message is in order, and once more with every message
/// checked first if one was not. See the module documentation.
pub(in crate::protobuf) fn in_order<T>(
    mut decode: impl FnMut() -> Result<T, ProtobufError>,
) -> Result<T, ProtobufError> {
    /// Puts the thread's state back as the caller had it, on return and on unwinding.
    struct Restore(State);
    impl Drop for Restore {
        fn drop(&mut self) {
            STATE.with(|state| state.set(self.0));
        }
    }
    let _restore = Restore(STATE.with(|state| state.replace(FRESH)));
    let first = decode();
    if !STATE.with(|state| state.get().descended) {
        return first;
    }
    drop(first);
    STATE.with(|state| {
        state.set(State {
            check: true,
            descended: false,
        })
    });
    decode()
}
