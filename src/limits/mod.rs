//! The judge limits of a run beyond memory and pids: `limits.cpu_time` (the CPU time of the whole
//! container, enforced by a watchdog from its cgroup's counter: [`cpu`]) and `limits.file_size`
//! (RLIMIT_FSIZE on every process, exec'd ones included: [`rules`]). Both are off by default; the
//! policy file gives defaults and ceilings, and the annotations `run.rloxsc.cpu_time` and
//! `run.rloxsc.file_size` or the flags `--cpu-time` and `--file-size` only tighten them. The run
//! record says `cpu_time_exceeded` when the watchdog killed the container and `file_size_exceeded`
//! when the kernel's SIGXFSZ ended its main process under a file-size limit (see [`crate::record`]).
//! `run --output SIZE` bounds the bytes the container writes to `run`'s stdout and stderr
//! ([`output`]): `output_limit_exceeded`. `limits.disk` bounds what a container writes into the
//! client's writable layer with a project quota where its filesystem has one ([`disk`]); the
//! annotations `run.rloxsc.disk` and `run.rloxsc.disk_required=true` only tighten it.

pub mod cpu;
pub mod disk;
pub mod output;
pub mod rules;

pub use rules::Requested;
