//! The map is true: ARCHITECTURE.md's "may depend on" table holds against every crate's
//! Cargo.toml, and no module of a crate imports one that imports it back.
//!
//! Both read the sources as text, as a newcomer reads them: the table's rows, each manifest's
//! `[dependencies]`, and every `crate::` and `super::` path outside comments and test modules
//! (a `use` statement's, brace groups and all, or one written inline in the code).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's members, as the root Cargo.toml lists them (folders).
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let line = manifest.lines().find(|l| l.starts_with("members = [")).expect("a members list");
    line.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

/// A crate's name and the hedge crates of its `[dependencies]` (not dev- or build-dependencies).
fn manifest_dependencies(folder: &str) -> (String, BTreeSet<String>) {
    let text = std::fs::read_to_string(root().join(folder).join("Cargo.toml")).unwrap();
    let mut name = None;
    let mut section = "";
    let mut hedge = BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section == "[package]" && line.starts_with("name") {
            name = line.split('"').nth(1).map(str::to_string);
        }
        if section == "[dependencies]" && line.starts_with("hedge-") {
            let dependency = line.split(['.', ' ', '=']).next().unwrap();
            hedge.insert(dependency.to_string());
        }
    }
    (name.expect("a package name"), hedge)
}

/// ARCHITECTURE.md's table: each crate and the hedge crates it may depend on. A parenthesis
/// explains and names nothing allowed ("(never lab)", "(eval only through them)"); "all of the
/// above" is every crate of the rows before; "nothing of hedge" and "—" are none.
fn allowed_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let start = text.find("| crate | may depend on |").expect("ARCHITECTURE.md has the 'may depend on' table");
    let mut table = BTreeMap::new();
    let mut above: Vec<String> = Vec::new();
    for row in text[start..].lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let name = cells[1].split('`').nth(1).expect("a crate name in backticks").to_string();
        let mut names = String::new();
        let mut depth = 0;
        for c in cells[2].chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => names.push(c),
                _ => {}
            }
        }
        let allowed: BTreeSet<String> = match names.trim() {
            "all of the above" => above.iter().cloned().collect(),
            "nothing of hedge" | "—" => BTreeSet::new(),
            list => list.split(',').map(|n| format!("hedge-{}", n.trim())).collect(),
        };
        above.push(name.clone());
        table.insert(name, allowed);
    }
    table
}

#[test]
fn every_dependency_between_crates_is_one_the_architecture_table_allows() {
    let table = allowed_dependencies();
    let mut faults = Vec::new();
    for folder in members() {
        let (name, dependencies) = manifest_dependencies(&folder);
        let Some(allowed) = table.get(&name) else {
            faults.push(format!("{name} ({folder}) has no row in ARCHITECTURE.md's table"));
            continue;
        };
        for dependency in dependencies.difference(allowed) {
            faults
                .push(format!("{name} → {dependency}: {folder}/Cargo.toml depends on it, the table does not allow it"));
        }
    }
    assert!(
        faults.is_empty(),
        "ARCHITECTURE.md's 'may depend on' table and the manifests disagree:\n{}",
        faults.join("\n")
    );
}

/// A module's path inside its crate (`["agnostic", "sweep"]`; the crate root is `[]`).
type Module = Vec<String>;

fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<Module, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path != src.join("bin") {
                    walk(&path, src, out);
                }
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            out.insert(module, path);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The code of a file without comments and without its test module (which, by the crates'
/// convention, ends the file).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every path a `use` tree names, brace groups expanded (`a::{b, c::{d, e}}`).
fn use_paths(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let base: Vec<String> = tree[..open]
            .trim_end_matches("::")
            .split("::")
            .filter(|s| !s.is_empty())
            .map(|s| s.trim().to_string())
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let prefix: Vec<String> = prefix.iter().cloned().chain(base).collect();
        let (mut depth, mut item) = (0, String::new());
        for c in inner.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_paths(&item, &prefix, out);
                    item.clear();
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        use_paths(&item, &prefix, out);
        return;
    }
    let tree = tree.split(" as ").next().unwrap().trim();
    if !tree.is_empty() {
        out.push(prefix.iter().cloned().chain(tree.split("::").map(|s| s.trim().to_string())).collect());
    }
}

/// The crate-relative paths a module's code names: `crate::a::b` as `[a, b]`, and `super::x`
/// from module `m` as `m`'s parent joined with `x`.
fn named_paths(module: &Module, code: &str) -> Vec<Vec<String>> {
    // `a/b.rs` and `a/b/mod.rs` are both module `a::b`, whose `super` is `a`.
    let parent = |levels: usize| -> Module { module[..module.len().saturating_sub(levels)].to_vec() };
    let mut raw = Vec::new();
    // `use` statements, with their brace groups.
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before_ok = at == 0 || !is_ident(rest[..at].chars().last().unwrap());
        let after = &rest[at + 4..];
        if before_ok && (after.trim_start().starts_with("crate::") || after.trim_start().starts_with("super::")) {
            let end = after.find(';').unwrap_or(after.len());
            use_paths(&after[..end], &[], &mut raw);
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    // Paths written inline.
    let text = code;
    for anchor in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(pos) = text[from..].find(anchor) {
            let at = from + pos;
            from = at + anchor.len();
            if at > 0 && (is_ident(text[..at].chars().last().unwrap()) || text[..at].ends_with("::")) {
                continue;
            }
            let path: String = text[at..].chars().take_while(|&c| is_ident(c) || c == ':').collect();
            raw.push(path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect());
        }
    }
    raw.into_iter()
        .filter_map(|segments: Vec<String>| {
            let mut segments = segments.into_iter().peekable();
            let mut base = match segments.peek().map(String::as_str) {
                Some("crate") => {
                    segments.next();
                    Vec::new()
                }
                Some("super") => {
                    let mut levels = 0;
                    while segments.peek().map(String::as_str) == Some("super") {
                        segments.next();
                        levels += 1;
                    }
                    parent(levels)
                }
                _ => return None,
            };
            base.extend(segments.filter(|s| s != "self"));
            Some(base)
        })
        .collect()
}

/// Each module's edges to the other modules of its crate (never to one it lies inside or that
/// lies inside it: a parent declares its children).
fn import_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules = modules(src);
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let code = code(&std::fs::read_to_string(file).unwrap());
        let mut edges = BTreeSet::new();
        for path in named_paths(module, &code) {
            let target = (0..=path.len()).rev().map(|k| path[..k].to_vec()).find(|p| modules.contains_key(p));
            if let Some(target) = target {
                let related = target.starts_with(module) || module.starts_with(&target);
                if !related {
                    edges.insert(target);
                }
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// The strongly connected groups of more than one module (Tarjan), each sorted.
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a Module, s: &mut State<'a>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        for w in &s.graph[v] {
            if !s.index.contains_key(w) {
                visit(w, s);
                let low = s.low[w].min(s.low[v]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w) {
                let low = s.index[w].min(s.low[v]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                group.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.found.push(group);
            }
        }
    }
    let mut state =
        State { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), next: 0, found: Vec::new() };
    for v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(v, &mut state);
        }
    }
    state.found.sort();
    state.found
}

/// The circles that remain from before this test, each with what undoes it. The list only
/// shrinks: a circle not on it fails, and so does one on it that is gone (strike it off).
const KNOWN_CIRCLES: &[(&str, &[&str], &str)] = &[];

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut faults = Vec::new();
    let mut seen_known = BTreeSet::new();
    for folder in members() {
        let src = root().join(&folder).join("src");
        let (name, _) = manifest_dependencies(&folder);
        for group in circles(&import_graph(&src)) {
            let known = KNOWN_CIRCLES.iter().find(|(c, modules, _)| *c == name && *modules == group.as_slice());
            match known {
                Some(_) => {
                    seen_known.insert((name.clone(), group.clone()));
                }
                None => {
                    faults.push(format!("{name}: {} import each other (directly or around a circle)", group.join(", ")))
                }
            }
        }
    }
    for (crate_name, modules, _) in KNOWN_CIRCLES {
        let group: Vec<String> = modules.iter().map(|m| m.to_string()).collect();
        if !seen_known.contains(&(crate_name.to_string(), group)) {
            faults.push(format!("{crate_name}: the known circle {modules:?} is gone or changed: update KNOWN_CIRCLES"));
        }
    }
    assert!(faults.is_empty(), "import circles inside crates:\n{}", faults.join("\n"));
}

#[test]
fn the_circle_finder_sees_a_circle_through_use_groups_inline_paths_and_super() {
    let folder = tempfile::tempdir().unwrap();
    let src = folder.path();
    std::fs::create_dir_all(src.join("area")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\npub mod c;\npub mod area;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::{b::{Thing, Other as O}, error::E};\n").unwrap();
    std::fs::write(src.join("b.rs"), "fn f() { crate::c::g() } // crate::a::ignored\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n").unwrap();
    std::fs::write(src.join("area/mod.rs"), "pub mod x;\npub mod y;\n").unwrap();
    std::fs::write(src.join("area/x.rs"), "use super::y::Y;\n").unwrap();
    std::fs::write(src.join("area/y.rs"), "fn h() { super::x::X }\n").unwrap();
    let graph = import_graph(src);
    assert_eq!(circles(&graph), vec![vec!["area::x".to_string(), "area::y".to_string()]]);
    // a → b → c, and c's test module and b's comment name a: no circle there.
    assert!(graph[&vec!["a".to_string()]].contains(&vec!["b".to_string()]));
    std::fs::write(src.join("c.rs"), "pub fn g() { crate::a::f() }\n").unwrap();
    assert_eq!(circles(&import_graph(src)).len(), 2, "a → b → c → a");
}

/// Whether a line calls the hedge binary (`$hedge`, `$HEDGE`, `target/release/hedge CMD`; Python's
/// path joined to `"release", "hedge"` or read from `HEDGE`; the main job's script).
fn calls_hedge(line: &str) -> bool {
    let variable = ["$hedge", "${hedge", "$HEDGE", "${HEDGE"].iter().any(|v| {
        line.match_indices(v)
            .any(|(at, _)| !line[at + v.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    });
    // The binary's path followed by a subcommand (not a copy of the file).
    let path = line.match_indices("target/release/hedge").any(|(at, p)| {
        let rest = line[at + p.len()..].trim_start_matches('"');
        rest.strip_prefix(' ').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_lowercase()))
    });
    let other = ["\"release\", \"hedge\"", "environ.get(\"HEDGE\"", "scripts/quickstart.sh \""];
    variable || path || other.iter().any(|o| line.contains(o))
}

/// Whether a script calls the hedge binary inside a loop: in a shell script, a call in a loop's
/// body or in a function that a loop's body calls; in a Python script (whose loops this does not
/// parse), a call anywhere beside any loop. A study is a plan file run by `hedge study`, not a
/// loop in a script.
fn loops_over_hedge(text: &str, python: bool) -> bool {
    let code: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let starts_loop = |l: &str| {
        ["for ", "while ", "until "].iter().any(|k| l.starts_with(k)) || l.contains("; do") || l.ends_with(" do")
    };
    if python {
        return code.iter().any(|l| calls_hedge(l)) && code.iter().any(|l| starts_loop(l));
    }
    // Functions whose bodies call hedge (a body ends at a line that is only `}`).
    let mut calling = Vec::new();
    let mut current: Option<(&str, bool)> = None;
    for line in &code {
        if let Some(name) = line.strip_suffix("() {") {
            current = Some((name, false));
        } else if *line == "}" {
            if let Some((name, true)) = current.take() {
                calling.push(name.to_string());
            }
        } else if let Some((_, calls)) = current.as_mut() {
            *calls |= calls_hedge(line);
        }
    }
    let mut depth = 0usize;
    for line in &code {
        if starts_loop(line) {
            depth += 1;
        }
        let calls = calls_hedge(line) || calling.iter().any(|f| line.split_whitespace().any(|w| w == f));
        if depth > 0 && calls {
            return true;
        }
        if line.starts_with("done") || line.ends_with("; done") {
            depth = depth.saturating_sub(1);
        }
    }
    false
}

#[test]
fn no_script_loops_over_hedge_commands() {
    let scripts = root().join("scripts");
    let mut found = Vec::new();
    let mut folders = vec![scripts.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            if loops_over_hedge(&text, path.extension().is_some_and(|e| e == "py")) {
                found.push(path.strip_prefix(root()).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    assert!(
        found.is_empty(),
        "scripts that loop over hedge commands (write a plan for `hedge study` instead): {found:?}"
    );
    assert!(loops_over_hedge("for s in a b; do\n  \"$hedge\" hib train --seed \"$s\"\ndone\n", false));
    assert!(loops_over_hedge(
        "train() {\n  \"$hedge\" hib train --seed \"$1\"\n}\nfor s in 0 1; do\n  train $s\ndone\n",
        false
    ));
    assert!(!loops_over_hedge("for f in *.log; do gzip $f; done\n\"$hedge\" report\n", false));
    assert!(!loops_over_hedge("# for each set\n\"$hedge\" study studies/active/paper-protocol.toml\n", false));
}
