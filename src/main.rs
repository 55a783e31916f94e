//! The `nexttoken` binary: parses the arguments and hands them to `cmd::run`.

use clap::Parser;
use nexttoken::cli::Cli;

fn main() {
    nexttoken::engine::heap::keep_freed_buffers();
    let cli = Cli::parse();
    let verbose = cli.model.verbose;
    if !verbose && std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // candle captures a backtrace into its errors whenever RUST_BACKTRACE is set, and prints it as
        // part of the message: dozens of lines around one sentence. Errors carry the sentence alone
        // unless --verbose; panics still follow RUST_BACKTRACE. Set before any other thread exists.
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
    if let Err(e) = nexttoken::cmd::run(cli) {
        if verbose {
            eprintln!("nexttoken: {e:?}");
        } else {
            eprintln!("nexttoken: {e:#}");
        }
        std::process::exit(1);
    }
}
