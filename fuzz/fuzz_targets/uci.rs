#![no_main]
//! The uci parser on arbitrary bytes: it must accept or refuse, never panic or abort.

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    hedge_data::fuzz::Target::Uci.run(bytes);
});
