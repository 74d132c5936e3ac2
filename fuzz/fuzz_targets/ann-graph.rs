#![no_main]
//! hedge's HNSW graph file (`ann.safetensors`) on arbitrary bytes: refused with a reason or
//! loaded, never a panic; a graph that loads answers a search without an index out of bounds.

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _ = hedge_ann::Hnsw::fuzz(bytes);
});
