//! Arbitrary bytes as a caller's config.json: parsed exactly as `create` parses it, hardened under
//! one of a few policies with host facts derived from the spec, and every hardened spec must satisfy
//! the hardening invariants (`rloxsc::harden::invariants::check`). No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rloxsc_fuzz::harden_spec_bytes(data);
});
