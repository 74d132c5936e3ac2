#![no_main]
//! hedge's HNSW graph file (`ann.safetensors`) on arbitrary bytes: refused with a reason or
//! loaded, never a panic; a graph that loads answers a search without an index out of bounds.

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    if let Ok(graph) = hedge_ann::Hnsw::from_bytes(bytes, "fuzz".as_ref()) {
        let query = vec![0.5f32; graph.dim()];
        let _ = graph.nearest(&query, 5);
    }
});
