#![no_main]
//! A `hib train --config` TOML file on arbitrary bytes: it must accept or refuse, never panic or abort.

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    hedge_embed::config::fuzz_config_file(bytes);
});
