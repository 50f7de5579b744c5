//! Arbitrary bytes as a policy file: parsed as rloxsc parses /etc/rloxsc/policy.toml; an accepted
//! policy must stay within the hard bounds, render to a file that parses back to itself, and harden a
//! careless spec into one that satisfies the hardening invariants. No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rloxsc_fuzz::policy_toml_bytes(data);
});
