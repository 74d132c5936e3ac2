//! One memory budget for every allocation a user's numbers drive.
//!
//! A command that is about to take memory in proportion to numbers a user typed (a batch, Monte
//! Carlo samples, candidates, projections, a pool, α values x repeats, an image header's sides)
//! first describes what it would take as a [`Footprint`] — an estimate of bytes as a function of
//! those numbers — and checks it against the [`MemoryBudget`] before any work starts. A footprint
//! over the budget is refused with the estimate, the budget, and for each number the largest value
//! that fits with the others unchanged, so a typo like `--batch 100000` or `--alphas 0:1:1e-12`
//! costs a second instead of an abort or the out-of-memory killer.
//!
//! The budget is `HEDGE_MEMORY_BUDGET` (bytes with an optional unit, `8GiB`, `500MB`, or a share
//! of the machine's memory, `60%`), else [`DEFAULT_SHARE`] of the machine's memory.

use crate::{Result, RunError};

/// The environment variable that sets the budget.
pub const BUDGET_ENV: &str = "HEDGE_MEMORY_BUDGET";
/// The share of the machine's memory one command may plan to take by default: leaves room for
/// the operating system, libtorch's own workspace and estimates that are off by a factor.
pub const DEFAULT_SHARE: f64 = 0.5;
/// The words every refusal over the memory budget contains, by which the Python bindings raise
/// `MemoryError` for it.
pub const OVER_MEMORY_BUDGET: &str = "over the memory budget";
/// Assumed when the machine's memory cannot be read (not Linux).
const FALLBACK_MACHINE_BYTES: u64 = 8 << 30;

/// How many bytes one command may plan to take, and where that number came from.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryBudget {
    pub bytes: f64,
    /// In words, for the error message ("half of this machine's 23.4 GiB").
    pub source: String,
}

impl MemoryBudget {
    /// The budget `HEDGE_MEMORY_BUDGET` sets, else [`DEFAULT_SHARE`] of the machine's memory.
    ///
    /// # Errors
    /// [`RunError::InvalidConfig`] when the variable is set but not a size or a share.
    pub fn from_env() -> Result<Self> {
        match std::env::var(BUDGET_ENV) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text, machine_bytes()),
            _ => Ok(Self::share(DEFAULT_SHARE, machine_bytes())),
        }
    }

    /// The bytes of [`MemoryBudget::from_env`], without the words.
    fn bytes_from_env() -> Result<f64> {
        match std::env::var(BUDGET_ENV) {
            Ok(text) if !text.trim().is_empty() => Ok(Self::parse(&text, machine_bytes())?.bytes),
            _ => Ok(DEFAULT_SHARE * machine_bytes() as f64),
        }
    }

    /// `share` of `machine` bytes.
    pub fn share(share: f64, machine: u64) -> Self {
        MemoryBudget {
            bytes: share * machine as f64,
            source: format!(
                "{:.0}% of this machine's {}; set {BUDGET_ENV} (e.g. 16GiB or 80%) to change it",
                share * 100.0,
                human_bytes(machine as f64)
            ),
        }
    }

    /// Reads a budget written as bytes with an optional unit (`123`, `500MB`, `8GiB`, `1.5TB`)
    /// or as a share of `machine` (`60%`).
    pub fn parse(text: &str, machine: u64) -> Result<Self> {
        let bad = || RunError::InvalidConfig {
            field: "HEDGE_MEMORY_BUDGET",
            value: text.to_string(),
            reason: "expected a size such as 16GiB, 500MB or 2000000000, or a share of this machine's memory \
                         such as 60%"
                .into(),
        };
        let t = text.trim();
        if let Some(share) = t.strip_suffix('%') {
            let share: f64 = share.trim().parse().map_err(|_| bad())?;
            if !(share > 0.0 && share <= 100.0) {
                return Err(bad());
            }
            let mut budget = Self::share(share / 100.0, machine);
            budget.source = format!("{BUDGET_ENV}={t} of this machine's {}", human_bytes(machine as f64));
            return Ok(budget);
        }
        let (number, unit) = number_and_unit(t, false).ok_or_else(bad)?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1.0,
            "kb" => 1e3,
            "mb" => 1e6,
            "gb" => 1e9,
            "tb" => 1e12,
            "kib" => 1024.0,
            "mib" => 1024f64.powi(2),
            "gib" => 1024f64.powi(3),
            "tib" => 1024f64.powi(4),
            _ => return Err(bad()),
        };
        let bytes = number * scale;
        if !(bytes.is_finite() && bytes >= 1.0) {
            return Err(bad());
        }
        Ok(MemoryBudget { bytes, source: format!("{BUDGET_ENV}={t}") })
    }

    /// Refuses `footprint` when its estimate exceeds the budget.
    ///
    /// # Errors
    /// [`RunError::OverBudget`]: the estimate, the budget, and for each of the footprint's
    /// numbers the largest value that fits with the others unchanged.
    pub fn check(&self, footprint: &Footprint) -> Result<()> {
        over_limit(footprint, self.bytes, human_bytes, "the memory budget", &self.source).map_err(RunError::OverBudget)
    }
}

/// `Err(message)` when `estimate`'s amount at its knobs' values exceeds `limit`: the amount, the
/// limit (`render`ed, called `limit_name`, from `source`), and for each knob the largest whole
/// value that fits with the others unchanged.
fn over_limit(
    estimate: &Footprint,
    limit: f64,
    render: fn(f64) -> String,
    limit_name: &str,
    source: &str,
) -> std::result::Result<(), String> {
    let values: Vec<f64> = estimate.knobs.iter().map(|k| k.value).collect();
    let need = (estimate.bytes)(&values);
    if need.is_finite() && need <= limit {
        return Ok(());
    }
    let mut fixes = Vec::new();
    for (i, knob) in estimate.knobs.iter().enumerate() {
        if knob.flag.is_empty() {
            continue;
        }
        if let Some(fit) = largest_fit(estimate, &values, i, limit) {
            fixes.push(format!("{} {}", knob.flag, group_digits(fit)));
        }
    }
    let settings = estimate
        .knobs
        .iter()
        .filter(|k| !k.flag.is_empty())
        .map(|k| format!("{} {}", k.flag, group_digits(k.value)))
        .collect::<Vec<_>>();
    let fixes = if fixes.is_empty() {
        format!("None of these numbers alone brings it within {limit_name}; lower several, or raise {limit_name}")
    } else {
        format!("Largest values that fit, the others unchanged: {}", fixes.join("; "))
    };
    Err(format!(
        "{} would take about {} ({}), over {limit_name} of {} ({source}). {fixes}",
        estimate.what,
        render(need),
        settings.join(", "),
        render(limit),
    ))
}

/// The largest whole value of knob `i` (at least its minimum, below its value) whose amount fits
/// `limit`, the other knobs at `values`; `None` when even the minimum does not fit.
fn largest_fit(estimate: &Footprint, values: &[f64], i: usize, limit: f64) -> Option<f64> {
    let knob = &estimate.knobs[i];
    let fits = |v: f64| {
        let mut at = values.to_vec();
        at[i] = v;
        let need = (estimate.bytes)(&at);
        need.is_finite() && need <= limit
    };
    let (mut lo, mut hi) = (knob.min, knob.value.min(9.0e15));
    if !fits(lo) || hi <= lo {
        return None;
    }
    // Invariant: fits(lo), !fits(hi) (or hi is the value itself, which does not fit).
    while hi - lo > 1.0 {
        let mid = ((lo + hi) / 2.0).floor();
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// A number a user gave that a footprint grows with.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    /// The flag (or config field) the user sets it with, as they would type it (`--batch`);
    /// empty for a slot the footprint does not use (left out of messages).
    pub flag: String,
    pub value: f64,
    /// The smallest value the command accepts (the search for a fitting value stops there).
    pub min: f64,
}

/// Bytes as a function of a footprint's knob values.
pub type BytesOf<'a> = Box<dyn Fn(&[f64]) -> f64 + 'a>;

/// An estimate of the bytes a command would take, as a function of the numbers a user gave.
pub struct Footprint<'a> {
    /// What takes the memory, in words ("hib train: one training step").
    pub what: String,
    pub knobs: Vec<Knob>,
    /// Bytes for the knobs' values, in the order of `knobs`; must grow with each of them.
    pub bytes: BytesOf<'a>,
}

impl<'a> Footprint<'a> {
    /// A footprint of `what` whose bytes `bytes` computes from the knobs' values.
    pub fn new(what: impl Into<String>, bytes: impl Fn(&[f64]) -> f64 + 'a) -> Self {
        Footprint { what: what.into(), knobs: Vec::new(), bytes: Box::new(bytes) }
    }

    /// Adds the number `value` given with `flag` (at least `min`).
    pub fn knob(mut self, flag: impl Into<String>, value: f64, min: f64) -> Self {
        self.knobs.push(Knob { flag: flag.into(), value, min });
        self
    }

    /// Checks the footprint against [`MemoryBudget::from_env`].
    pub fn check(&self) -> Result<()> {
        // The budget's words (a formatted size) are built only for a refusal: a small call's
        // check (Python's `match_probability` at B = 1) spent more on them than on comparing.
        let values: Vec<f64> = self.knobs.iter().map(|k| k.value).collect();
        let need = (self.bytes)(&values);
        if need.is_finite() && need <= MemoryBudget::bytes_from_env()? {
            return Ok(());
        }
        MemoryBudget::from_env()?.check(self)
    }
}

/// The environment variable that sets the work bound.
pub const WORK_ENV: &str = "HEDGE_WORK_BOUND";
/// The default work bound: one day of estimated time. Estimates are for a 2-core machine at the
/// rates in [`rates`]; a command planned past the bound is refused before it starts, since a
/// loop count with a few zeros too many is far more often a typo than a plan. Longer plans (the
/// paper's 500,000-step schedule on a CPU: days) raise it with `HEDGE_WORK_BOUND`.
pub const DEFAULT_WORK_SECONDS: f64 = 86_400.0;

/// The throughputs work estimates divide by: a 2-core CPU, measured on hedge's own kernels
/// and rounded up, so that an estimate errs short and only truly long work is refused.
pub mod rates {
    /// Multiply–adds a second of dense tensor arithmetic (convolutions, matrix products,
    /// Cholesky factorisations): the HIB network trains at about 2,000 images a second on 2
    /// cores at about 3.3·10⁷ multiply–adds per image (forward and backward).
    pub const DENSE_PER_SECOND: f64 = 1e11;
    /// Seconds of one optimiser step of a small network (a few thousand weights), libtorch's
    /// per-call overhead included.
    pub const SMALL_STEP_SECONDS: f64 = 1e-4;
    /// Seconds of one iteration of a loop whose every iteration hands work to the thread pool
    /// and back (a Frank–Wolfe step over a small pool): the hand-off, whatever the work.
    pub const PARALLEL_ITERATION_SECONDS: f64 = 1e-5;
    /// Seconds of one scalar sampling step (one Gibbs sweep: two random variates and a few
    /// sums; `hedge bayes gibbs --burn-in 10000000` measured 73 ns a sweep).
    pub const SCALAR_STEP_SECONDS: f64 = 5e-8;
}

/// How much time one command may plan to take before it starts, and where that number came
/// from: the bound on loops a user's numbers drive (repeats, restarts, ensemble members, seeds,
/// Gibbs sweeps, images written), as [`MemoryBudget`] is on memory.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkBound {
    pub seconds: f64,
    /// In words, for the error message.
    pub source: String,
}

impl WorkBound {
    /// The bound `HEDGE_WORK_BOUND` sets (`12h`, `7d`, `90m`, `3600s` or seconds), else
    /// [`DEFAULT_WORK_SECONDS`].
    ///
    /// # Errors
    /// [`RunError::InvalidConfig`] when the variable is set but not a duration.
    pub fn from_env() -> Result<Self> {
        match std::env::var(WORK_ENV) {
            Ok(text) if !text.trim().is_empty() => Self::parse(&text),
            _ => Ok(WorkBound {
                seconds: DEFAULT_WORK_SECONDS,
                source: format!(
                    "hedge's default, one day; times are estimated for 2 cores; set {WORK_ENV} (e.g. 7d or 48h) to \
                     raise it"
                ),
            }),
        }
    }

    /// Reads a bound written as a duration: a number with an optional unit `s`, `m`, `h` or
    /// `d` (`12h`, `7d`, `3600`).
    pub fn parse(text: &str) -> Result<Self> {
        let bad = || RunError::InvalidConfig {
            field: "HEDGE_WORK_BOUND",
            value: text.to_string(),
            reason: "expected a duration such as 12h, 7d, 90m or 3600 (seconds)".into(),
        };
        let t = text.trim();
        let (number, unit) = number_and_unit(t, true).ok_or_else(bad)?;
        let scale = match unit {
            "" | "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return Err(bad()),
        };
        let seconds = number * scale;
        if !(seconds.is_finite() && seconds >= 1.0) {
            return Err(bad());
        }
        Ok(WorkBound { seconds, source: format!("{WORK_ENV}={t}; times are estimated for 2 cores") })
    }

    /// Refuses `workload` when its estimate exceeds the bound.
    ///
    /// # Errors
    /// [`RunError::OverWorkBound`]: the estimate, the bound, and for each of the workload's
    /// numbers the largest value that fits with the others unchanged.
    pub fn check(&self, workload: &Workload) -> Result<()> {
        over_limit(&workload.0, self.seconds, human_duration, "the work bound", &self.source)
            .map_err(RunError::OverWorkBound)
    }
}

/// An estimate of the time a command would take (seconds on a 2-core machine, at
/// [`rates`]), as a function of the numbers a user gave: a [`Footprint`] whose amount is time.
pub struct Workload<'a>(Footprint<'a>);

impl<'a> Workload<'a> {
    /// A workload of `what` whose estimated seconds `seconds` computes from the knobs' values.
    pub fn new(what: impl Into<String>, seconds: impl Fn(&[f64]) -> f64 + 'a) -> Self {
        Workload(Footprint::new(what, seconds))
    }

    /// Adds the number `value` given with `flag` (at least `min`).
    pub fn knob(self, flag: impl Into<String>, value: f64, min: f64) -> Self {
        Workload(self.0.knob(flag, value, min))
    }

    /// Checks the workload against [`WorkBound::from_env`].
    pub fn check(&self) -> Result<()> {
        WorkBound::from_env()?.check(self)
    }
}

/// `text` as a leading number and the unit after it (`"8GiB"` → 8, `"GiB"`), the number in
/// scientific notation too when `exponent`; `None` when no number leads.
fn number_and_unit(text: &str, exponent: bool) -> Option<(f64, &str)> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || (exponent && (c == 'e' || c == 'E'))))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// `seconds` in words: `42 s`, `3.5 hours`, `12.0 days`, `3.2e9 years`.
pub fn human_duration(seconds: f64) -> String {
    let days = seconds / 86_400.0;
    if !seconds.is_finite() || days >= 3650.0 {
        format!("{:.1e} years", days / 365.25)
    } else if days >= 2.0 {
        format!("{days:.1} days")
    } else if seconds >= 7200.0 {
        format!("{:.1} hours", seconds / 3600.0)
    } else {
        format!("{seconds:.0} s")
    }
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`), or 8 GiB where it cannot be read.
/// Read once per process: every checked call asks for it, and a read of `/proc/meminfo` (which
/// the kernel writes out on each read) cost a small call from Python more than the call's own
/// checks (`results/python/overhead.md`).
pub fn machine_bytes() -> u64 {
    static MACHINE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MACHINE.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
                Some(kib * 1024)
            })
            .unwrap_or(FALLBACK_MACHINE_BYTES)
    })
}

/// `bytes` with a binary unit (`12.0 GiB`); astronomically large values in scientific notation.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    if !bytes.is_finite() || bytes >= 1024f64.powi(5) {
        return format!("{bytes:.1e} bytes");
    }
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A whole number with thousands separators (`1,000,000`); non-whole or huge ones as given.
pub fn group_digits(value: f64) -> String {
    if value.fract() != 0.0 || value.abs() >= 1e16 {
        return format!("{value}");
    }
    let digits = format!("{}", value.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(bytes: f64) -> MemoryBudget {
        MemoryBudget { bytes, source: "test".into() }
    }

    #[test]
    fn a_footprint_within_the_budget_passes_and_one_over_it_names_the_largest_values_that_fit() {
        // 4 bytes x batch x samples: 1,000 x 8 x 4 = 32,000 bytes.
        let fp =
            Footprint::new("a step", |v| 4.0 * v[0] * v[1]).knob("--batch", 1000.0, 2.0).knob("--samples", 8.0, 1.0);
        budget(32_000.0).check(&fp).unwrap();
        let e = budget(10_000.0).check(&fp).unwrap_err().to_string();
        // 10,000 / 32 = 312.5 -> 312; 10,000 / 4,000 = 2.5 -> 2.
        assert!(e.contains("--batch 312") && e.contains("--samples 2"), "{e}");
        assert!(e.contains("31.2 KiB") && e.contains("9.8 KiB") && e.contains("a step"), "{e}");
        // A number whose minimum does not fit either is not offered.
        let e = budget(10.0).check(&fp).unwrap_err().to_string();
        assert!(e.contains("None of these numbers alone"), "{e}");
    }

    #[test]
    fn absurd_values_are_refused_without_overflow() {
        let fp = Footprint::new("a sweep", |v| 1024.0 * v[0] * v[1]).knob("--alphas", 1e12, 1.0).knob(
            "--repeats",
            1e12,
            1.0,
        );
        let e = budget(1e9).check(&fp).unwrap_err().to_string();
        assert!(e.contains("--alphas") && e.contains("bytes"), "{e}");
    }

    #[test]
    fn a_loop_count_over_the_work_bound_is_refused_naming_the_count_that_fits() {
        // 10 s a repeat: 1,000 repeats is 2.8 hours, within a day; 1e12 repeats is not.
        let bound = WorkBound { seconds: 86_400.0, source: "test".into() };
        let work = |repeats: f64| Workload::new("an evaluation", |v| 10.0 * v[0]).knob("--repeats", repeats, 1.0);
        bound.check(&work(1000.0)).unwrap();
        let e = bound.check(&work(1e12)).unwrap_err().to_string();
        assert!(e.contains("work bound") && e.contains("--repeats 8,640") && e.contains("3.2e5 years"), "{e}");
        for bad in ["lots", "0", "-1", "inf", "3 weeks"] {
            let e = WorkBound::parse(bad).unwrap_err().to_string();
            assert!(e.contains("HEDGE_WORK_BOUND") && e.contains("12h"), "{bad}: {e}");
        }
        assert_eq!(WorkBound::parse("12h").unwrap().seconds, 43_200.0);
        assert_eq!(WorkBound::parse("2d").unwrap().seconds, 172_800.0);
        assert_eq!(WorkBound::parse("1e6").unwrap().seconds, 1e6);
    }

    #[test]
    fn budgets_parse_from_sizes_and_shares() {
        let gib = 1024f64.powi(3);
        assert_eq!(MemoryBudget::parse("8GiB", 0).unwrap().bytes, 8.0 * gib);
        assert_eq!(MemoryBudget::parse("500 MB", 0).unwrap().bytes, 5e8);
        assert_eq!(MemoryBudget::parse("2000", 0).unwrap().bytes, 2000.0);
        assert_eq!(MemoryBudget::parse("25%", 1 << 30).unwrap().bytes, gib / 4.0);
        for bad in ["lots", "0", "-5GB", "150%", "8 parsecs"] {
            let e = MemoryBudget::parse(bad, 1 << 30).unwrap_err().to_string();
            assert!(e.contains("HEDGE_MEMORY_BUDGET") && e.contains("16GiB"), "{bad}: {e}");
        }
        assert_eq!(human_bytes(1536.0), "1.5 KiB");
        assert_eq!(group_digits(1234567.0), "1,234,567");
    }
}
