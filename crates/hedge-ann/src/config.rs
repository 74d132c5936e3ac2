use serde::{Deserialize, Serialize};

use crate::{AnnError, Result};

/// Settings of the HNSW graph (Malkov & Yashunin 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct AnnConfig {
    /// HNSW links per point on the upper layers (M); layer 0 keeps twice as many.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 16))]
    pub max_connections: usize,
    /// HNSW candidates kept while inserting a point (efConstruction).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 200))]
    pub ef_construction: usize,
    /// HNSW candidates kept while searching (ef); raised to the number asked for when smaller.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 200))]
    pub ef_search: usize,
}

impl Default for AnnConfig {
    fn default() -> Self {
        AnnConfig { max_connections: 16, ef_construction: 200, ef_search: 200 }
    }
}

impl AnnConfig {
    pub fn with_ef_search(mut self, ef_search: usize) -> Self {
        self.ef_search = ef_search;
        self
    }

    pub fn with_max_connections(mut self, m: usize) -> Self {
        self.max_connections = m;
        self
    }

    pub fn with_ef_construction(mut self, ef: usize) -> Self {
        self.ef_construction = ef;
        self
    }

    /// Refuses settings the graph cannot be built with.
    pub fn check(&self) -> Result<()> {
        if !(2..=256).contains(&self.max_connections) {
            return Err(AnnError::invalid(
                "max_connections",
                self.max_connections,
                "HNSW links per point must lie in 2..=256 (16 is usual)",
            ));
        }
        if self.ef_construction < self.max_connections {
            return Err(AnnError::invalid(
                "ef_construction",
                self.ef_construction,
                format!("must be at least max_connections ({})", self.max_connections),
            ));
        }
        if self.ef_search == 0 {
            return Err(AnnError::invalid("ef_search", 0, "must be at least 1"));
        }
        // Each of up to 64 threads keeps its candidate lists (a distance and an id, with the
        // heaps' overhead: about 64 bytes per candidate).
        hedge_run::Footprint::new("the HNSW graph's candidate lists", |v| (v[0] + v[1]) * 64.0 * 64.0)
            .knob("--ef-construction", self.ef_construction as f64, self.max_connections as f64)
            .knob("--ef-search", self.ef_search as f64, 1.0)
            .check()?;
        Ok(())
    }
}
