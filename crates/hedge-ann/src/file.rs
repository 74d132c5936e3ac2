//! The graph as a safetensors file (`points` f32 `[n, dim]`, `level` u8 `[n]`, `links0` u32
//! `[n, 2M + 1]`, `upper` u32 `[Σ level · (M + 1)]`; the settings and the entry point in the
//! header's metadata), so NumPy and PyTorch read it as they are. Loading checks every field
//! a search later trusts: a damaged file is an error, never an index out of bounds.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use crate::graph::{lines, Hnsw, MAX_LEVEL};
use crate::{AnnConfig, AnnError, Result};

/// The `format` entry of the file's metadata.
pub const FORMAT_NAME: &str = "hedge-hnsw";
/// The `version` entry of the file's metadata.
pub const FORMAT_VERSION: u32 = 1;

fn view(dtype: Dtype, shape: Vec<usize>, data: &[u8]) -> Result<TensorView<'_>> {
    TensorView::new(dtype, shape, data).map_err(|e| AnnError::file("<memory>", format!("{e:?}")))
}

impl Hnsw {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let points: Vec<u8> = self.values().iter().flat_map(|v| v.to_le_bytes()).collect();
        let links0 = atomics_bytes(&self.links0);
        let upper = atomics_bytes(&self.upper);
        let n = self.len();
        let m = self.config.max_connections;
        let tensors = vec![
            ("points", view(Dtype::F32, vec![n, self.dim], &points)?),
            ("level", view(Dtype::U8, vec![n], &self.levels)?),
            ("links0", view(Dtype::U32, vec![n, 2 * m + 1], &links0)?),
            ("upper", view(Dtype::U32, vec![self.upper.len()], &upper)?),
        ];
        let metadata: HashMap<String, String> = [
            ("format", FORMAT_NAME.to_string()),
            ("version", FORMAT_VERSION.to_string()),
            ("max_connections", m.to_string()),
            ("ef_construction", self.config.ef_construction.to_string()),
            ("ef_search", self.config.ef_search.to_string()),
            ("entry", self.entry.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        safetensors::tensor::serialize(tensors, &Some(metadata))
            .map_err(|e| AnnError::file("<memory>", format!("serialising the graph failed: {e:?}")))
    }

    /// Writes the graph to `path` (a temporary sibling, then renamed).
    pub fn save(&self, path: &Path) -> Result<()> {
        hedge_run::write_atomic(path, &self.to_bytes()?)?;
        Ok(())
    }

    /// Reads a graph [`Hnsw::save`] wrote.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| AnnError::io(path, e))?;
        Self::from_bytes(&bytes, path)
    }

    /// Fuzz target: `bytes` through [`Hnsw::from_bytes`], and a search of every graph that
    /// loads (so a graph accepted with a bad link or level would panic here); `true` when
    /// accepted.
    pub fn fuzz(bytes: &[u8]) -> bool {
        match Self::from_bytes(bytes, Path::new("fuzz")) {
            Ok(graph) => {
                let query = vec![0.5f32; graph.dim()];
                let found = graph.nearest_one(&query, 5, graph.config.ef_search);
                assert!(found.iter().all(|&(id, _)| id < graph.len()), "a search left the graph");
                true
            }
            Err(_) => false,
        }
    }

    /// Graph files for a fuzzer to start from: small graphs of one, two and three dimensions,
    /// with upper layers, built from fixed points.
    pub fn fuzz_seeds() -> Vec<Vec<u8>> {
        [(40usize, 1usize, 4usize), (300, 2, 4), (200, 3, 8)]
            .into_iter()
            .filter_map(|(n, dim, m)| {
                let points: Vec<f32> = (0..n * dim).map(|i| ((i * 7919) % 1013) as f32 / 1013.0).collect();
                let config = AnnConfig::default().with_max_connections(m).with_ef_construction(32);
                Hnsw::build(&points, dim, &config).ok()?.to_bytes().ok()
            })
            .collect()
    }

    /// Reads a graph from a file's bytes; `path` only names it in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self> {
        let bad = |what: String| AnnError::file(path, format!("{what}; the file is not an intact hedge HNSW graph"));
        let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("unreadable header ({e:?})")))?;
        let metadata = header.metadata().clone().unwrap_or_default();
        let field = |key: &str| metadata.get(key).ok_or_else(|| bad(format!("its metadata lacks '{key}'")));
        let number = |key: &str| -> Result<usize> {
            field(key)?.parse::<usize>().map_err(|_| bad(format!("its metadata's '{key}' is not a whole number")))
        };
        if field("format")? != FORMAT_NAME {
            return Err(bad(format!("its metadata's format is '{}', not '{FORMAT_NAME}'", field("format")?)));
        }
        if number("version")? != FORMAT_VERSION as usize {
            return Err(bad(format!(
                "format version {} (this hedge reads version {FORMAT_VERSION})",
                field("version")?
            )));
        }
        let config = AnnConfig {
            max_connections: number("max_connections")?,
            ef_construction: number("ef_construction")?,
            ef_search: number("ef_search")?,
        };
        config.check().map_err(|e| bad(format!("its settings are invalid ({e})")))?;
        let m = config.max_connections;
        let tensors = SafeTensors::deserialize(bytes).map_err(|e| bad(format!("unreadable tensors ({e:?})")))?;
        let tensor = |name: &str, dtype: Dtype| -> Result<(Vec<usize>, &[u8])> {
            let view = tensors.tensor(name).map_err(|_| bad(format!("it has no tensor '{name}'")))?;
            if view.dtype() != dtype {
                return Err(bad(format!("tensor '{name}' is {:?}, not {dtype:?}", view.dtype())));
            }
            Ok((view.shape().to_vec(), view.data()))
        };
        let (level_shape, level_bytes) = tensor("level", Dtype::U8)?;
        let n = level_shape.first().copied().unwrap_or(0);
        if level_shape.len() != 1 || n == 0 || n >= u32::MAX as usize {
            return Err(bad(format!("'level' has shape {level_shape:?}, not [n] with 0 < n < 2³²")));
        }
        let levels = level_bytes.to_vec();
        if let Some(&l) = levels.iter().find(|&&l| l > MAX_LEVEL) {
            return Err(bad(format!("a point's level is {l}, above the cap of {MAX_LEVEL}")));
        }
        let (point_shape, point_bytes) = tensor("points", Dtype::F32)?;
        if point_shape.len() != 2 || point_shape[0] != n || point_shape[1] == 0 {
            return Err(bad(format!("'points' has shape {point_shape:?}, not [{n}, dim]")));
        }
        let dim = point_shape[1];
        let points: Vec<f32> =
            point_bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if points.iter().any(|v| !v.is_finite()) {
            return Err(bad("a point is not finite".into()));
        }
        let entry = number("entry")?;
        if entry >= n {
            return Err(bad(format!("its entry point {entry} is not one of its {n} points")));
        }
        // The lists' shapes are checked against the levels before any list memory is taken.
        let (links0_shape, links0_bytes) = tensor("links0", Dtype::U32)?;
        if links0_shape != [n, 2 * m + 1] {
            return Err(bad(format!("'links0' has shape {links0_shape:?}, not [{n}, {}]", 2 * m + 1)));
        }
        let upper_len: u64 = levels.iter().map(|&l| u64::from(l) * (m as u64 + 1)).sum();
        let (upper_shape, upper_bytes) = tensor("upper", Dtype::U32)?;
        if upper_shape.len() != 1 || upper_shape[0] as u64 != upper_len {
            return Err(bad(format!("'upper' has shape {upper_shape:?}, but the levels ask for [{upper_len}]")));
        }
        let mut graph = Hnsw::empty(lines(&points), dim, config, levels)?;
        graph.entry = entry as u32;
        graph.max_level = graph.levels[entry];
        if graph.levels.iter().any(|&l| l > graph.max_level) {
            return Err(bad("its entry point is not on the top layer".into()));
        }
        fill(&graph.links0, links0_bytes);
        fill(&graph.upper, upper_bytes);
        for id in 0..n as u32 {
            for level in 0..=graph.levels[id as usize] {
                let slots = graph.slots(id, level);
                let count = slots[0].load(Relaxed) as usize;
                if count > slots.len() - 1 {
                    return Err(bad(format!("point {id} has {count} links on layer {level}, above its capacity")));
                }
                if let Some(link) = slots[1..=count]
                    .iter()
                    .map(|s| s.load(Relaxed) as usize)
                    .find(|&l| l >= n || (level > 0 && graph.levels[l] < level))
                {
                    return Err(bad(format!("point {id} links to {link} on layer {level}, which is not there")));
                }
            }
        }
        Ok(graph)
    }
}

fn atomics_bytes(values: &[AtomicU32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.load(Relaxed).to_le_bytes()).collect()
}

fn fill(values: &[AtomicU32], bytes: &[u8]) {
    for (v, b) in values.iter().zip(bytes.chunks_exact(4)) {
        v.store(u32::from_le_bytes([b[0], b[1], b[2], b[3]]), Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    fn graph() -> Hnsw {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let points: Vec<f32> = (0..3000 * 3).map(|_| StandardNormal.sample(&mut rng)).collect();
        Hnsw::build(&points, 3, &AnnConfig::default().with_max_connections(6).with_ef_construction(40)).unwrap()
    }

    #[test]
    fn a_saved_graph_loads_and_answers_the_same() {
        let index = graph();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ann.safetensors");
        index.save(&path).unwrap();
        let loaded = Hnsw::load(&path).unwrap();
        assert_eq!((loaded.len(), loaded.dim(), loaded.config()), (index.len(), index.dim(), index.config()));
        let queries: Vec<f32> = (0..300).map(|i| (i as f32 * 0.37).sin()).collect();
        assert_eq!(loaded.nearest(&queries, 7), index.nearest(&queries, 7));
        assert!(loaded.levels == index.levels && loaded.entry == index.entry && loaded.values() == index.values());
        let links = |g: &Hnsw| atomics_bytes(&g.links0).into_iter().chain(atomics_bytes(&g.upper)).collect::<Vec<_>>();
        assert!(links(&loaded) == links(&index), "the lists differ after a round trip");
    }

    #[test]
    fn damaged_files_are_refused_with_the_reason() {
        let index = graph();
        let bytes = index.to_bytes().unwrap();
        let path = Path::new("g.safetensors");
        let err = |b: &[u8]| Hnsw::from_bytes(b, path).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err(&bytes[..100]).contains("not an intact hedge HNSW graph"));
        // A link pointing past the last point: the count of point 0's layer-0 list is the first
        // u32 of `links0`; its first link follows.
        let (header_len, header) = SafeTensors::read_metadata(&bytes).unwrap();
        let offset = 8 + header_len + header.tensors()["links0"].data_offsets.0;
        let mut broken = bytes.clone();
        broken[offset + 4..offset + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(err(&broken).contains("point 0 links to"), "{}", err(&broken));
        let mut broken = bytes.clone();
        broken[offset..offset + 4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(err(&broken).contains("above its capacity"), "{}", err(&broken));
        // Another file's metadata.
        let other =
            safetensors::tensor::serialize(vec![("x", TensorView::new(Dtype::U8, vec![1], &[0u8]).unwrap())], &None)
                .unwrap();
        assert!(err(&other).contains("lacks 'format'"), "{}", err(&other));
    }

    /// Graph files through the mutation fuzzer for a few seconds: every seed loads and no
    /// mutant panics (`hedge bench fuzz --target ann-graph` runs longer campaigns, and
    /// `scripts/fuzz-campaign.sh` the coverage-guided one).
    #[test]
    fn graph_files_fuzz_without_a_panic() {
        let seeds = Hnsw::fuzz_seeds();
        assert_eq!(seeds.len(), 3);
        assert!(seeds.iter().all(|s| Hnsw::fuzz(s)), "a seed graph is rejected");
        let report = hedge_data::fuzz::fuzz_fn(
            "ann-graph",
            Hnsw::fuzz,
            false,
            &seeds,
            std::time::Duration::from_secs(4),
            u64::MAX,
            7,
        );
        println!("fuzz {}", report.markdown_row());
        assert!(report.executions > 50 && report.accepted > 0, "{report:?}");
        assert_eq!(report.panic_count, 0, "panicked on {} input(s)", report.panic_count);
    }
}
