//! The `rloxsc` binary: everything lives in the library; see [`rloxsc::cli`].

fn main() {
    std::process::exit(rloxsc::cli::main());
}
