//! How the fragments write numbers: fixed decimals with a typographic minus, `mean ± std`,
//! thousands separated by commas, ranges, Markdown tables and wrapped paragraphs.

/// `x` with `digits` decimals and a typographic minus (`−0.190`).
pub fn num(x: f64, digits: usize) -> String {
    format!("{x:.digits$}").replace('-', "−")
}

/// `x` with `digits` decimals, a plain hyphen-minus (where a README has always had one).
pub fn fixed(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// `mean ± std` (the mean with a typographic minus; the mean alone for one repeat).
pub fn mean_std(mean: f64, std: Option<f64>, digits: usize) -> String {
    match std {
        Some(s) => format!("{} ± {s:.digits$}", num(mean, digits)),
        None => num(mean, digits),
    }
}

/// The shortest decimal that reads back as `x` (`0.9`, `1`, `0`): how a setting such as α is
/// written.
pub fn short(x: f64) -> String {
    format!("{x}")
}

/// An integer with its thousands separated by commas (`1,000,000`).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `x` with `digits` decimals and its integer part's thousands separated by commas.
pub fn thousands_fixed(x: f64, digits: usize) -> String {
    let text = format!("{:.digits$}", x.abs());
    let (whole, fraction) = text.split_once('.').map_or((text.as_str(), None), |(w, f)| (w, Some(f)));
    let sign = if x < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') { "-" } else { "" };
    let whole = thousands(whole.parse().unwrap_or(0));
    match fraction {
        Some(f) => format!("{sign}{whole}.{f}"),
        None => format!("{sign}{whole}"),
    }
}

/// `lo–hi` of `values` with two decimals, or `≈ v` when both ends round alike.
pub fn span2(values: &[f64]) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = (format!("{lo:.2}"), format!("{hi:.2}"));
    if lo == hi {
        format!("≈ {lo}")
    } else {
        format!("{lo}–{hi}")
    }
}

/// The smallest and largest of `values`.
pub fn range(values: &[f64]) -> (f64, f64) {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// A Markdown table from its header and rows of cells.
pub fn table<S: AsRef<str>>(header: &[&str], rows: &[Vec<S>]) -> String {
    let mut out = format!("| {} |\n|{}", header.join(" | "), "---|".repeat(header.len()));
    for row in rows {
        let cells: Vec<&str> = row.iter().map(AsRef::as_ref).collect();
        out.push_str(&format!("\n| {} |", cells.join(" | ")));
    }
    out
}

/// `text` filled greedily into lines of at most `width` characters, every line after the first
/// starting with `indent` (words are never broken, hyphens never split).
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let prefix = if lines.is_empty() { "" } else { indent };
        if line.is_empty() {
            line = format!("{prefix}{word}");
        } else if line.chars().count() + 1 + word.chars().count() <= width {
            line.push(' ');
            line.push_str(word);
        } else {
            lines.push(std::mem::take(&mut line));
            line = format!("{indent}{word}");
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_python_formats_them() {
        // Python 3: f"{-0.18981:.3f}" == "-0.190", f"{1234567:,}" == "1,234,567",
        // f"{4656.27:,.1f}" == "4,656.3", f"{0.125:.2f}" == "0.12" (the exact binary value is
        // a tie, rounded to even), f"{0.9:g}" == "0.9", f"{1.0:g}" == "1".
        assert_eq!(num(-0.18981, 3), "−0.190");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands_fixed(4656.27, 1), "4,656.3");
        assert_eq!(thousands_fixed(12.0, 0), "12");
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(short(0.9), "0.9");
        assert_eq!(short(1.0), "1");
        assert_eq!(mean_std(0.5, Some(0.0123), 3), "0.500 ± 0.012");
    }

    #[test]
    fn a_span_of_values_that_round_alike_is_one_value() {
        assert_eq!(span2(&[0.501, 0.504]), "≈ 0.50");
        assert_eq!(span2(&[0.61, 0.58, 0.7]), "0.58–0.70");
    }

    #[test]
    fn a_table_has_a_header_a_rule_and_a_row_per_record() {
        let rows = vec![vec!["a".to_string(), "1".into()], vec!["b".into(), "2".into()]];
        assert_eq!(table(&["name", "n"], &rows), "| name | n |\n|---|---|\n| a | 1 |\n| b | 2 |");
    }

    #[test]
    fn wrapping_fills_lines_and_indents_all_but_the_first() {
        // Python 3: textwrap.wrap("aa bb cc dd", 5, subsequent_indent="  ") == ["aa bb", "  cc", "  dd"]
        assert_eq!(wrap("aa bb cc dd", 5, "  "), "aa bb\n  cc\n  dd");
    }
}
