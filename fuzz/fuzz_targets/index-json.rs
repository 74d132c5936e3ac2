#![no_main]
//! `index.json` of a gallery index on arbitrary bytes: it must accept or refuse, never panic or abort.

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    hedge_embed::search::IndexManifest::fuzz(bytes);
});
