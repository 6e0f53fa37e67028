//! The C face of fencelock: `libfencelock.{so,a}` with the header `include/fencelock.h`,
//! generated from this crate by cbindgen.
//!
//! Conventions (after rustls-ffi):
//! - names are `fl_noun_verb`; handles (`fl_manager`, `fl_lock`, `fl_manager_options`) are
//!   opaque, made by a constructor and given back with a `_free` function (`_free(NULL)` is a
//!   no-op);
//! - every fallible function returns an `fl_status` (a `uint32_t` whose values never change
//!   meaning) and writes its results through out-pointers, last in the argument list, only on
//!   success;
//! - every exported body runs inside a panic boundary: a Rust panic becomes `FL_PANIC`, never an
//!   unwind into C;
//! - `fl_last_error_message()` gives the message of the last failed call on the calling thread.
//!
//! The binding holds no lock logic: it converts arguments and units, maps
//! [`fencelock::ErrorKind`] to `fl_status`, and owns handles around
//! [`fencelock::blocking`].
//!
//! # Safety
//! Every `unsafe extern "C"` function here has the same contract, stated once instead of on
//! each (the header's comments are what C callers read): every pointer argument is NULL or
//! points to what its type says (a live handle made by this library and not yet freed, a
//! NUL-terminated string, an array of the stated length, writable storage for an
//! out-pointer). NULL is always checked and reported; anything else cannot be checked.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

// cbindgen writes the header in module order: statuses and errors, options, manager, locks,
// events.
mod error;

mod options;

mod manager;

mod by_name;
mod holder;
mod lock;

mod many;

// The `fl_lock_on_lost` slot of a handle.
mod hook;
mod lost;

mod family;
// The one body behind the family's entry points.
mod lease;

// Acquisitions that complete through a callback (no thread per waiter).
mod pending;

// Leader election: terms are lock handles; campaigns also start as pending acquisitions.
mod election;

mod events;
// Measurements: the metric callback and the names let into its labels.
mod metrics;
// Traces: the span callback and the parent number of the next acquire call.
mod spans;

mod ffi;

pub use by_name::{
    fl_extend_by_token, fl_manager_is_held_by_token, fl_manager_is_locked, fl_manager_remaining_ms,
    fl_release_by_token,
};
pub use election::{
    fl_election, fl_election_campaign, fl_election_campaign_interruptible,
    fl_election_campaign_start, fl_election_free, fl_election_leader, fl_election_new,
    fl_election_observe, fl_election_observer_new, fl_election_proclaim, fl_leader, fl_observer,
    fl_observer_free, fl_observer_next, FL_ELECTION_VALUE_MAX, FL_ELECTION_VALUE_SIZE,
};
pub use error::{
    fl_last_error_copy, fl_last_error_message, fl_status, fl_status_str, fl_version, status_of,
};
pub use events::{fl_event_callback, fl_event_level, fl_set_event_callback};
pub use family::{
    fl_lease_kind, fl_lock_kind, fl_rw_mode, fl_rwlock, fl_rwlock_acquire,
    fl_rwlock_acquire_interruptible, fl_rwlock_extend_by_token, fl_rwlock_free, fl_rwlock_new,
    fl_rwlock_occupancy, fl_rwlock_release_by_token, fl_rwlock_state, fl_rwlock_try_acquire,
    fl_semaphore, fl_semaphore_acquire, fl_semaphore_acquire_interruptible,
    fl_semaphore_extend_by_token, fl_semaphore_free, fl_semaphore_new, fl_semaphore_occupancy,
    fl_semaphore_release_by_token, fl_semaphore_state, fl_semaphore_try_acquire, fl_with_rwlock,
    fl_with_semaphore,
};
pub use holder::{
    fl_holder, fl_manager_holder, fl_manager_options_set_holder, fl_rwlock_holders,
    fl_semaphore_holders, FL_HOLDER_LABEL_MAX, FL_HOLDER_LABEL_SIZE,
};
pub use lock::{
    fl_interrupt_callback, fl_lock, fl_lock_acquire, fl_lock_acquire_interruptible,
    fl_lock_acquire_with_token, fl_lock_auto_extend, fl_lock_callback, fl_lock_detach,
    fl_lock_extend, fl_lock_extend_by, fl_lock_fencing_token, fl_lock_free, fl_lock_is_lost,
    fl_lock_name, fl_lock_release, fl_lock_token, fl_lock_try_acquire, fl_lock_validity_ms,
    fl_with_lock,
};
pub use lost::{
    fl_lock_is_held, fl_lock_lost_reason, fl_lock_on_lost, fl_lost_reason, fl_lost_reason_str,
};
pub use manager::{fl_manager, fl_manager_free, fl_manager_new, fl_settle_all};
pub use many::{
    fl_lock_acquire_many, fl_lock_acquire_many_start, fl_lock_fencing_token_at, fl_lock_name_at,
    fl_lock_name_count,
};
pub use metrics::{
    fl_manager_options_add_metric_name, fl_metric_callback, fl_metric_count, fl_metric_describe,
    fl_metric_description, fl_metric_instrument, fl_set_metric_callback,
};
pub use options::{
    fl_manager_options, fl_manager_options_free, fl_manager_options_new,
    fl_manager_options_set_connect_timeout_ms, fl_manager_options_set_drift_factor,
    fl_manager_options_set_key_prefix, fl_manager_options_set_password,
    fl_manager_options_set_refused_attempts, fl_manager_options_set_replica_ack,
    fl_manager_options_set_retry_delay_ms, fl_manager_options_set_retry_jitter_ms,
    fl_manager_options_set_server_timeout_ms, fl_manager_options_set_tls_ca_file,
    fl_manager_options_set_tls_ca_pem, fl_manager_options_set_tls_client_cert_files,
    fl_manager_options_set_tls_client_cert_pem, fl_manager_options_set_tls_insecure,
};
pub use pending::{
    fl_acquire_done, fl_lock_acquire_start, fl_pending, fl_pending_cancel, fl_pending_free,
    fl_rwlock_acquire_start, fl_semaphore_acquire_start,
};
pub use spans::{
    fl_set_span_callback, fl_span, fl_span_attribute, fl_span_callback, fl_span_value_kind,
    fl_trace_next,
};
