//! The room's limits: a token bucket per student, and a lock on an address that keeps trying wrong
//! join codes. Time comes in as an argument, so the rules are tested without a clock.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Requests a student may send a second, and the burst above that.
pub const RATE_PER_S: f64 = 8.0;
pub const BURST: f64 = 16.0;
/// Wrong join codes an address may try before it is locked out, and for how long.
pub const WRONG_CODES: u32 = 10;
pub const LOCKOUT: Duration = Duration::from_secs(60);
/// Addresses remembered for the lockout at most (the oldest entries are forgotten first).
pub const ADDRESSES: usize = 4096;

/// A token bucket: `BURST` requests at once, refilled at `RATE_PER_S`.
#[derive(Debug, Clone)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    pub fn new(now: Instant) -> Self {
        Bucket {
            tokens: BURST,
            at: now,
        }
    }

    /// Takes one request's token, or says no.
    pub fn take(&mut self, now: Instant) -> bool {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * RATE_PER_S).min(BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Wrong join codes per address.
#[derive(Debug, Default)]
pub struct Lockouts {
    wrong: HashMap<IpAddr, (u32, Instant)>,
}

impl Lockouts {
    /// Whether `ip` may try a code now.
    pub fn allowed(&mut self, ip: IpAddr, now: Instant) -> bool {
        match self.wrong.get(&ip) {
            Some(&(n, since)) if n >= WRONG_CODES => {
                if now.saturating_duration_since(since) < LOCKOUT {
                    return false;
                }
                self.wrong.remove(&ip);
                true
            }
            _ => true,
        }
    }

    /// Counts a wrong code from `ip`.
    pub fn wrong_code(&mut self, ip: IpAddr, now: Instant) {
        if self.wrong.len() >= ADDRESSES && !self.wrong.contains_key(&ip) {
            self.wrong
                .retain(|_, (_, since)| now.saturating_duration_since(*since) < LOCKOUT);
            if self.wrong.len() >= ADDRESSES {
                self.wrong.clear();
            }
        }
        let e = self.wrong.entry(ip).or_insert((0, now));
        e.0 += 1;
        e.1 = now;
    }

    pub fn len(&self) -> usize {
        self.wrong.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wrong.is_empty()
    }
}
