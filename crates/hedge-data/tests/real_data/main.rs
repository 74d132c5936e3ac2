//! The loaders on the real data sets of `$HEDGE_DATA_DIR`, in one test binary.

mod real_context;
mod real_tables;
mod real_uci;
