//! `nexttoken trace`: JSON Lines of a session.
