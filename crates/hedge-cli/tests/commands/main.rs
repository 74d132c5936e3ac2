//! The `hedge` binary end to end, every command-line test in one test binary: one build and
//! link instead of eight, and the tests share the cores instead of waiting for each other's
//! slowest test (`cargo test` runs test binaries one after another).

mod common;

mod active_cli;
mod agnostic_cli;
mod architecture;
mod bayes_cli;
mod cli;
mod docs;
mod hostile_input;
mod identification_cli;
mod own_data_cli;
mod studies;
