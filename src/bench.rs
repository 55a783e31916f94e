//! `nexttoken bench`: prefill and decode speed.
