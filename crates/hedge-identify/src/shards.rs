//! A gallery split into shards, each searchable on its own machine, with the decision taken
//! once, on the machine that embeds the probes.
//!
//! [`shard_index`] splits an index folder (`hedge hib index`) into contiguous ranges of its
//! items. Each shard is an index folder of its own (`shard-00000/`, …: its items' embeddings, a
//! graph over their component means, the same settings and abstention rule, every file under the
//! SHA-256 of its `index.json`), so `hedge hib search --index shard-00002` works on one shard
//! alone. `shards.json` lists the shards with their item ranges and the SHA-256 of each shard's
//! `index.json`.
//!
//! A search fans the probes' component means out to every shard ([`Gallery::propose`] then
//! [`ShardCandidates::gather`]: each shard's nearest items with their distances and embedding
//! rows), keeps each probe's `candidates` nearest over all shards ([`merge_candidates`]), and
//! applies the exact match-probability re-rank and the abstention rule once
//! ([`crate::index::Rules::decide`]). Where every shard's ANN search finds its exact nearest items, the merged candidates are the
//! single index's and so are the answers.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use crate::index::{
    rewrite_calibration, swap_into_place, write_index, Calibration, Gallery, IndexFiles, IndexManifest, GALLERY_FILE,
    INDEX_FILE,
};
use crate::{IdentifyError, Result};
use hedge_embed::distribution::Embedding;
use hedge_run::rundir::sha256_file;

/// The description of a shard set.
pub const SHARDS_FILE: &str = "shards.json";
const SHARDS_FORMAT: u32 = 1;

/// One shard of a [`ShardSet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardEntry {
    /// Folder name inside the set (`shard-00000`).
    pub name: String,
    /// The shard's first item in the whole gallery's order.
    pub first_item: usize,
    pub items: usize,
    /// SHA-256 of the shard's `index.json` (which holds the SHA-256 of its other files).
    pub index_sha256: String,
}

/// `shards.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSet {
    pub format: u32,
    /// The index folder the shards were cut from, and its `index.json`'s SHA-256; for a set
    /// written from embeddings ([`write_embedded_shard`]), what the gallery was, and no SHA-256.
    pub source: PathBuf,
    pub source_sha256: String,
    pub items: usize,
    pub shards: Vec<ShardEntry>,
}

impl ShardSet {
    /// Reads `folder/shards.json`, checking that its shards cover the items once, in order.
    pub fn read(folder: &Path) -> Result<Self> {
        let path = folder.join(SHARDS_FILE);
        if !path.is_file() {
            return Err(IdentifyError::input(
                folder,
                format!("has no {SHARDS_FILE}; write a shard set with shard_index"),
            ));
        }
        let text = std::fs::read_to_string(&path).map_err(|e| IdentifyError::io(&path, e))?;
        let set: ShardSet = serde_json::from_str(&text).map_err(|e| {
            IdentifyError::input(&path, format!("is not a shard set description ({e}); write it again"))
        })?;
        if set.format != SHARDS_FORMAT {
            return Err(IdentifyError::input(
                &path,
                format!("has format {}; this hedge reads {SHARDS_FORMAT}", set.format),
            ));
        }
        let mut next = 0;
        for s in &set.shards {
            let plain = s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if s.first_item != next || s.items == 0 || !plain {
                return Err(IdentifyError::input(
                    &path,
                    format!("shard '{}' does not continue the items at {next}; write the shard set again", s.name),
                ));
            }
            next += s.items;
        }
        if next != set.items || set.shards.is_empty() {
            return Err(IdentifyError::input(&path, format!("its shards hold {next} items, not {}", set.items)));
        }
        Ok(set)
    }

    /// Opens shard `i`: its `index.json` must have the SHA-256 this set recorded, and its other
    /// files the SHA-256 its `index.json` records (a damaged or swapped shard is refused).
    pub fn open_shard(&self, folder: &Path, i: usize) -> Result<IndexFiles> {
        let entry = self
            .shards
            .get(i)
            .ok_or_else(|| IdentifyError::invalid("shard", i, format!("the set has {} shards", self.shards.len())))?;
        let dir = folder.join(&entry.name);
        let index_json = dir.join(INDEX_FILE);
        if !index_json.is_file() || sha256_file(&index_json)? != entry.index_sha256 {
            return Err(IdentifyError::input(
                &index_json,
                format!("is missing or differs from the SHA-256 in {SHARDS_FILE}; the shard was damaged: write the set again"),
            ));
        }
        let files = IndexFiles::open(&dir)?;
        if files.manifest().item_names.len() != entry.items {
            return Err(IdentifyError::input(
                &index_json,
                format!("holds {} items, {SHARDS_FILE} says {}", files.manifest().item_names.len(), entry.items),
            ));
        }
        Ok(files)
    }
}

/// Splits the index folder `index` into `shards` contiguous, near-equal shards under the new
/// folder `out` (refused when it exists, unless `overwrite` and it holds only a shard set).
/// Written to a temporary sibling, then renamed.
pub fn shard_index(index: &Path, out: &Path, shards: usize, overwrite: bool) -> Result<ShardSet> {
    let files = IndexFiles::open(index)?;
    let items = files.manifest().item_names.len();
    if shards == 0 || shards > items {
        return Err(IdentifyError::invalid(
            "shards",
            shards,
            format!("give 1 to {items} (the index holds {items} items)"),
        ));
    }
    check_shard_set_out(out, overwrite)?;
    let gallery = files.load_gallery()?;
    let stored = Tensor::read_safetensors(index.join(GALLERY_FILE))?;
    let eta = stored
        .into_iter()
        .find(|(name, _)| name == "eta")
        .map(|(_, t)| t)
        .ok_or_else(|| IdentifyError::input(index.join(GALLERY_FILE), "has no tensor 'eta'; rebuild the index"))?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(IdentifyError::input(out, "its parent folder does not exist; create it first"));
    }
    let tmp = hedge_run::atomic::temp_sibling(out);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| IdentifyError::io(&tmp, e))?;
    let result = (|| -> Result<ShardSet> {
        hedge_run::atomic::mark_as_hedges(&tmp, SHARD_SET_KIND)?;
        let mut entries = Vec::with_capacity(shards);
        for s in 0..shards {
            let (first, len) = (s * items / shards, (s + 1) * items / shards - s * items / shards);
            let range: Vec<usize> = (first..first + len).collect();
            let part = gallery.subset(&range)?;
            let name = format!("shard-{s:05}");
            write_index(&part, &eta.narrow(0, first as i64, len as i64), &tmp.join(&name), false)?;
            entries.push(ShardEntry {
                index_sha256: sha256_file(&tmp.join(&name).join(INDEX_FILE))?,
                name,
                first_item: first,
                items: len,
            });
        }
        let set = ShardSet {
            format: SHARDS_FORMAT,
            source: std::fs::canonicalize(index).unwrap_or_else(|_| index.to_path_buf()),
            source_sha256: sha256_file(&index.join(INDEX_FILE))?,
            items,
            shards: entries,
        };
        let text = serde_json::to_string_pretty(&set).expect("a shard set serialises");
        hedge_run::write_atomic(&tmp.join(SHARDS_FILE), text.as_bytes())?;
        Ok(set)
    })();
    let set = match result {
        Ok(set) => set,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    swap_into_place(&tmp, out, overwrite)?;
    Ok(set)
}

/// Writes one shard of a set whose gallery was embedded elsewhere (by workers that each hold the
/// run, e.g. Ray Data's): the index folder `out` (which must not exist) for `embedding`, its
/// items' `eta`, identities and names, under `template` ([`IndexManifest::for_run`] with the
/// whole gallery's `class_names` and `gallery_source`). Every shard of a set shares the template;
/// [`seal_shard_set`] then chooses the abstention rule once and writes `shards.json`.
///
/// # Shapes
/// `embedding.mean` (and `variance`): `[N, C, D]`; `eta`: `[N]`; `labels`, `item_names`: N.
pub fn write_embedded_shard(
    template: &IndexManifest,
    embedding: Embedding,
    eta: &Tensor,
    labels: Vec<u32>,
    item_names: Vec<String>,
    out: &Path,
) -> Result<()> {
    if labels.is_empty() {
        return Err(IdentifyError::invalid("items", 0, "a shard holds at least one item"));
    }
    if eta.size() != [labels.len() as i64] {
        return Err(IdentifyError::invalid(
            "eta",
            format!("{:?}", eta.size()),
            format!("one η per item ([{}])", labels.len()),
        ));
    }
    if template.class_names.is_empty() {
        return Err(IdentifyError::invalid("class_names", 0, "the template names the gallery's identities"));
    }
    let mut manifest = template.clone();
    manifest.item_names = item_names;
    manifest.files.clear();
    manifest.sha256.clear();
    let variance = if manifest.model == hedge_embed::ModelKind::Point { None } else { embedding.variance };
    if variance.is_none() && manifest.model != hedge_embed::ModelKind::Point {
        return Err(IdentifyError::invalid("variance", "none", "a stochastic model's shard needs the variances"));
    }
    let gallery = Gallery::from_embedding(manifest, Embedding { mean: embedding.mean, variance }, labels)?;
    write_index(&gallery, eta, out, false)
}

/// Finishes a shard set whose shards [`write_embedded_shard`] wrote into `folder`, named and
/// sized by `shards` in item order: with `validation` (where the probes came from, and each
/// probe's uncertainty and whether its top identity was right, e.g. from
/// [`Rules::validate`](crate::index::Rules::validate) over candidates gathered from
/// these shards), the abstention rule for the shards' target risk is chosen once and written
/// into every shard; then `shards.json`. Every shard must share one template (run, weights,
/// identities, settings).
pub fn seal_shard_set(
    folder: &Path,
    source: PathBuf,
    shards: &[(String, usize)],
    validation: Option<(String, &[f64], &[bool])>,
) -> Result<ShardSet> {
    let first = shards.first().ok_or_else(|| IdentifyError::invalid("shards", 0, "give at least one shard"))?;
    let template = IndexFiles::open(&folder.join(&first.0))?.manifest().clone();
    let calibration = validation
        .map(|(source, uncertainty, correct)| {
            Calibration::choose(
                source,
                template.calibration.score,
                uncertainty,
                correct,
                template.calibration.target_risk,
            )
        })
        .transpose()?;
    let (mut entries, mut next) = (Vec::with_capacity(shards.len()), 0);
    for (name, items) in shards {
        let dir = folder.join(name);
        let manifest = match &calibration {
            Some(c) => rewrite_calibration(&dir, c)?,
            None => IndexFiles::open(&dir)?.manifest().clone(),
        };
        let same = (&manifest.weights_sha256, &manifest.class_names, manifest.dim, manifest.components)
            == (&template.weights_sha256, &template.class_names, template.dim, template.components)
            && (manifest.ann, manifest.search) == (template.ann, template.search);
        if !same {
            return Err(IdentifyError::input(
                dir.join(INDEX_FILE),
                format!(
                    "was written under another run, identities or settings than {}; write every shard of a set \
                     from one template",
                    first.0
                ),
            ));
        }
        if manifest.item_names.len() != *items {
            return Err(IdentifyError::input(
                dir.join(INDEX_FILE),
                format!("holds {} items, not the {items} the set lists", manifest.item_names.len()),
            ));
        }
        entries.push(ShardEntry {
            name: name.clone(),
            first_item: next,
            items: *items,
            index_sha256: sha256_file(&dir.join(INDEX_FILE))?,
        });
        next += items;
    }
    let set = ShardSet { format: SHARDS_FORMAT, source, source_sha256: String::new(), items: next, shards: entries };
    hedge_run::atomic::mark_as_hedges(folder, SHARD_SET_KIND)?;
    let text = serde_json::to_string_pretty(&set).expect("a shard set serialises");
    hedge_run::write_atomic(&folder.join(SHARDS_FILE), text.as_bytes())?;
    // Read back through the checks a search applies.
    ShardSet::read(folder)
}

/// The kind of folder a shard set is (its ownership marker).
pub const SHARD_SET_KIND: &str = "hib shard set";

/// A shard set replaces its folder whole: `overwrite` is accepted only for a folder hedge made
/// that holds nothing but `shards.json` and `shard-*` folders.
pub fn check_shard_set_out(out: &Path, overwrite: bool) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !overwrite {
        return Err(IdentifyError::input(
            out,
            "already exists; choose another folder, or pass overwrite to replace it",
        ));
    }
    hedge_run::atomic::check_output_dir(out, SHARD_SET_KIND, true)?;
    if let Some(name) = hedge_run::atomic::entries_besides_marker(out)
        .into_iter()
        .find(|n| n != SHARDS_FILE && !n.starts_with("shard-"))
    {
        return Err(IdentifyError::input(
            out,
            format!("holds '{name}', which is not part of a shard set; move it out first or choose another folder"),
        ));
    }
    Ok(())
}

/// One shard's answer for a batch of probes: each probe's nearest items in the shard (at most
/// the index's `candidates`, nearest first, padded with item −1 and distance +∞) with the
/// embedding rows the re-rank needs.
#[derive(Debug)]
pub struct ShardCandidates {
    /// Probes, and candidate slots per probe.
    pub probes: usize,
    pub slots: usize,
    /// `[probes * slots]`: the item's index in the whole gallery (the shard's first item
    /// added), −1 for an empty slot.
    pub items: Vec<i64>,
    /// `[probes * slots]`: distance between the closest component means (+∞ when empty).
    pub distances: Vec<f32>,
    /// `[probes * slots]`: identity (index into the manifest's `class_names`), 0 when empty.
    pub labels: Vec<i64>,
    /// `[probes * slots]`: the item's name ("" when empty).
    pub names: Vec<String>,
    /// `[probes * slots, C, D]` means and variances (zeros in empty slots; no variances for a
    /// point model).
    pub embedding: Embedding,
}

impl ShardCandidates {
    /// The candidates of `gallery` (a shard whose items start at `first_item` in the whole
    /// gallery) for every probe.
    ///
    /// # Shapes
    /// `probes.mean`: `[P, C, D]`.
    pub fn gather(gallery: &Gallery, first_item: usize, probes: &Embedding) -> Result<Self> {
        let proposals = gallery.propose(probes, false)?;
        let slots = gallery.manifest.search.candidates;
        let n = proposals.len();
        let mut items = vec![-1i64; n * slots];
        let mut distances = vec![f32::INFINITY; n * slots];
        let mut labels = vec![0i64; n * slots];
        let mut names = vec![String::new(); n * slots];
        let mut local = vec![0usize; n * slots];
        for (i, found) in proposals.iter().enumerate() {
            for (j, &(item, distance)) in found.iter().enumerate() {
                let at = i * slots + j;
                items[at] = (first_item + item) as i64;
                distances[at] = distance;
                labels[at] = i64::from(gallery.labels()[item]);
                names[at] = gallery.manifest.item_names[item].clone();
                local[at] = item;
            }
        }
        let mut embedding = gallery.rows(&local);
        // Empty slots hold item 0's rows; zero them so nothing reads as a real candidate.
        let filled = Tensor::from_slice(&items.iter().map(|&i| i >= 0).collect::<Vec<_>>()).view([-1, 1, 1]);
        embedding.mean = embedding.mean.where_self(&filled, &embedding.mean.zeros_like());
        embedding.variance = embedding.variance.map(|v| v.where_self(&filled, &v.zeros_like()));
        Ok(ShardCandidates { probes: n, slots, items, distances, labels, names, embedding })
    }
}

/// Candidates gathered for a batch of probes, ready for [`Rules::decide`](crate::index::Rules::decide)
/// through [`Gathered::candidates`].
#[derive(Debug)]
pub struct Gathered {
    pub embedding: Embedding,
    pub labels: Vec<u32>,
    pub item_names: Vec<String>,
    /// Per probe, its rows nearest first.
    pub proposals: Vec<Vec<usize>>,
}

impl Gathered {
    pub fn candidates(&self) -> crate::index::Candidates<'_> {
        crate::index::Candidates {
            embedding: &self.embedding,
            labels: &self.labels,
            item_names: &self.item_names,
            proposals: &self.proposals,
        }
    }
}

/// Each probe's `keep` nearest candidates over every shard's answer, nearest first (ties: the
/// earlier shard, then the earlier slot), as one set of rows.
pub fn merge_candidates(parts: &[ShardCandidates], keep: usize) -> Result<Gathered> {
    let first = parts.first().ok_or_else(|| IdentifyError::invalid("shards", 0, "give at least one shard's answer"))?;
    let probes = first.probes;
    if let Some(p) = parts.iter().find(|p| p.probes != probes) {
        return Err(IdentifyError::invalid(
            "shards",
            p.probes,
            format!("every shard must answer the same {probes} probes"),
        ));
    }
    let mut picks: Vec<(usize, usize)> = Vec::new();
    let mut proposals = Vec::with_capacity(probes);
    for i in 0..probes {
        let mut all: Vec<(f32, usize, usize)> = Vec::new();
        for (s, part) in parts.iter().enumerate() {
            for j in 0..part.slots {
                let at = i * part.slots + j;
                if part.items[at] >= 0 {
                    all.push((part.distances[at], s, at));
                }
            }
        }
        all.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
        all.truncate(keep);
        proposals.push((picks.len()..picks.len() + all.len()).collect());
        picks.extend(all.into_iter().map(|(_, s, at)| (s, at)));
    }
    let mut means = Vec::with_capacity(picks.len());
    let mut variances = Vec::with_capacity(picks.len());
    let (mut labels, mut item_names) = (Vec::with_capacity(picks.len()), Vec::with_capacity(picks.len()));
    for &(s, at) in &picks {
        let part = &parts[s];
        means.push(part.embedding.mean.get(at as i64));
        if let Some(v) = &part.embedding.variance {
            variances.push(v.get(at as i64));
        }
        labels.push(
            u32::try_from(part.labels[at]).map_err(|_| IdentifyError::invalid("labels", part.labels[at], "≥ 0"))?,
        );
        item_names.push(part.names[at].clone());
    }
    let (c, d) = (first.embedding.components(), first.embedding.dim());
    let stack = |rows: &[Tensor]| {
        if rows.is_empty() {
            Tensor::zeros([0, c, d], (Kind::Float, tch::Device::Cpu))
        } else {
            Tensor::stack(rows, 0)
        }
    };
    let variance = (first.embedding.variance.is_some()).then(|| stack(&variances));
    Ok(Gathered { embedding: Embedding { mean: stack(&means), variance }, labels, item_names, proposals })
}
