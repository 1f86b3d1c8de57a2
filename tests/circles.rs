//! No import circle between files: every crate's module tree is read from its
//! sources, each file's paths into its own crate (`use`, and paths written in
//! expressions and types) become edges to the file that defines what they name,
//! and a strongly connected set of two or more files fails the test, which
//! prints each circle's files and the lines that close it.
//!
//! A file may use what the files of its ancestor modules define (`super::X`
//! in `job/remote.rs` naming `job/mod.rs`'s `JobEvent`): a folder's `mod.rs` is
//! its surface, and its children are its parts. Those edges are not counted;
//! every other edge is, so two siblings, or a file and another folder, that use
//! each other form a circle.
//!
//! It needs no tool from crates.io and no compiler internals, so it reads Rust
//! with a small tokenizer: comments, strings and character literals are skipped,
//! `#[cfg(test)]` items are left out (tests may reach anywhere), a path through
//! a `pub use` is followed to the file that defines the item, and a name brought
//! in by `use` that is a module is followed when a later path starts with it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The crate roots of the workspace, relative to its top directory.
const ROOTS: &[&str] = &[
    "src/lib.rs",
    "launcher/src/main.rs",
    "launcher/src/bin/oshrun.rs",
    "capi/src/lib.rs",
    "capi/src/bin/oshcc.rs",
];

#[test]
fn no_file_imports_itself_through_others() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut report = String::new();
    for root in ROOTS {
        let krate = Crate::read(&top.join(root));
        for circle in krate.circles() {
            report += &krate.describe(&circle, top);
        }
    }
    assert!(report.is_empty(), "import circles between files:\n{report}");
}

/// The files at the bottom of each crate, which ARCHITECTURE says every
/// layer may use: each names nothing of its crate outside this set (a file
/// named by its path from the top; a folder ends in `/`).
const BOTTOM: &[(&str, &[&str])] = &[(
    "src/lib.rs",
    &[
        "src/error.rs",
        "src/sync.rs",
        "src/site.rs",
        "src/syscall.rs",
        "src/words.rs",
        "src/protocol/",
    ],
)];

#[test]
fn the_bottom_files_name_nothing_above_them() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut report = String::new();
    for (root, bottom) in BOTTOM {
        let krate = Crate::read(&top.join(root));
        let low = |f: usize| {
            let name = krate.name(f, top);
            bottom.iter().any(|b| {
                if b.ends_with('/') {
                    name.starts_with(b)
                } else {
                    name == *b
                }
            })
        };
        for ((a, b), refs) in krate.edges() {
            if low(a) && !low(b) {
                let lines: Vec<String> = refs
                    .iter()
                    .map(|r| format!("{}:{} ({})", krate.name(a, top), r.line, r.text))
                    .collect();
                report += &format!(
                    "  {} -> {}: {}\n",
                    krate.name(a, top),
                    krate.name(b, top),
                    lines.join(", ")
                );
            }
        }
    }
    assert!(report.is_empty(), "a bottom file names a file above it:\n{report}");
}

// ---- tokens ------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(&'static str),
}

/// Rust source as tokens with their line numbers, without comments; strings
/// are kept (for `#[path = "…"]`), character literals and lifetimes dropped.
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let b = src.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let count = |s: &[u8]| s.iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += count(&b[start..i]);
        } else if let Some(end) = raw_string_end(b, i) {
            out.push((Tok::Str(String::new()), line));
            line += count(&b[start..end]);
            i = end;
        } else if c == b'"' || (c == b'b' && b.get(i + 1) == Some(&b'"')) {
            i += if c == b'b' { 2 } else { 1 };
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            let body = &src[start..i.min(b.len())];
            let body = body.trim_start_matches('b').trim_matches('"').to_string();
            out.push((Tok::Str(body), line));
            line += count(&b[start..i.min(b.len())]);
        } else if c == b'\'' {
            // 'a' or '\n' is a character; 'a without a closing quote a lifetime.
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if i + 1 < b.len() && b.get(char_end(b, i + 1)) == Some(&b'\'') {
                i = char_end(b, i + 1) + 1;
            } else {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), line));
        } else if b[i..].starts_with(b"::") {
            out.push((Tok::Punct("::"), line));
            i += 2;
        } else {
            const ONE: &[&str] = &["{", "}", "(", ")", "[", "]", ";", ",", "*", "#", "=", "!"];
            let p = ONE.iter().find(|p| p.as_bytes()[0] == c);
            out.push((Tok::Punct(p.copied().unwrap_or(".")), line));
            i = char_end(b, i);
        }
    }
    out
}

/// The end of the UTF-8 character that starts at `i`.
fn char_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() && (b[i] & 0xC0) == 0x80 {
        i += 1;
    }
    i
}

/// The end of a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) that starts at `i`.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
    let rest = &b[j + 1..];
    let at = rest.windows(close.len()).position(|w| w == close.as_slice())?;
    Some(j + 1 + at + close.len())
}

// ---- the module tree -----------------------------------------------------------

/// A module: its path from the crate root and the file it lives in (an inline
/// module lives in its parent's file).
type ModPath = Vec<String>;

/// One path into the crate, as written, with its line.
#[derive(Debug, Clone)]
struct Ref {
    from: ModPath,
    segs: Vec<String>,
    line: usize,
    text: String,
}

#[derive(Default)]
struct Crate {
    files: Vec<PathBuf>,
    /// The module path of each file.
    file_modules: Vec<ModPath>,
    /// Module path → index into `files`.
    modules: BTreeMap<ModPath, usize>,
    /// Items each module defines, by name.
    defines: HashMap<ModPath, BTreeSet<String>>,
    /// `pub use` re-exports: (module, name) → absolute path of the target.
    reexports: HashMap<(ModPath, String), Vec<String>>,
    /// Glob re-exports: module → modules whose items it re-exports.
    globs: HashMap<ModPath, Vec<Vec<String>>>,
    /// `macro_rules!` names (exported ones live at the crate root) → file.
    macros: HashMap<String, usize>,
    refs: Vec<Ref>,
}

/// Where a module's text is: its file, the folder of its child modules' files,
/// and the folder that `#[path]` is relative to.
struct Here {
    file: usize,
    dir: PathBuf,
    file_dir: PathBuf,
}

const DEFINERS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "const",
    "static",
    "union",
    "mod",
    "macro_rules",
];

impl Crate {
    fn read(root: &Path) -> Crate {
        let mut krate = Crate::default();
        krate.read_file(root, Vec::new(), true);
        krate
    }

    /// Reads the file of module `path`; `owns_dir` says its children live beside
    /// it (a crate root or `mod.rs`) rather than in a folder named after it.
    fn read_file(&mut self, file: &Path, path: ModPath, owns_dir: bool) {
        let src = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let index = self.files.len();
        self.files.push(file.to_path_buf());
        self.file_modules.push(path.clone());
        let dir = if owns_dir {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        let toks = tokenize(&src);
        let here = Here {
            file: index,
            dir,
            file_dir: file.parent().unwrap().to_path_buf(),
        };
        self.walk(&toks, 0, toks.len(), &path, &here);
    }

    /// Reads the tokens `t[from..to]` of module `module`, which lives in `here`.
    fn walk(&mut self, t: &[(Tok, usize)], from: usize, to: usize, module: &ModPath, here: &Here) {
        self.modules.insert(module.clone(), here.file);
        // Child modules can be named before their `mod` line.
        let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
        let mut depth = 0;
        for k in from..to {
            match &t[k].0 {
                Tok::Punct("{") => depth += 1,
                Tok::Punct("}") => depth -= 1,
                Tok::Ident(m) if m == "mod" && depth == 0 => {
                    if let Some((Tok::Ident(name), _)) = t.get(k + 1) {
                        let mut child = module.clone();
                        child.push(name.clone());
                        aliases.insert(name.clone(), child);
                    }
                }
                _ => {}
            }
        }
        let mut i = from;
        while i < to {
            let attr = attributes(t, i);
            let j = attr.next;
            let is_pub = matches!(&t.get(j), Some((Tok::Ident(k), _)) if k == "pub");
            let k = if is_pub { skip_visibility(t, j) } else { j };
            if attr.cfg_test {
                i = skip_item(t, k, to);
                continue;
            }
            for (segs, at) in &attr.paths {
                if let Some(abs) = self.absolute(module, segs, &aliases) {
                    self.refs.push(Ref {
                        from: module.clone(),
                        segs: abs,
                        line: t[*at].1,
                        text: segs.join("::"),
                    });
                }
            }
            match (
                &t.get(k).map(|x| &x.0),
                t.get(k + 1).map(|x| &x.0),
                t.get(k + 2).map(|x| &x.0),
            ) {
                (Some(Tok::Ident(m)), Some(Tok::Ident(name)), Some(Tok::Punct(p)))
                    if m == "mod" && (*p == ";" || *p == "{") =>
                {
                    let mut child = module.clone();
                    child.push(name.clone());
                    self.defines.entry(module.clone()).or_default().insert(name.clone());
                    if *p == ";" {
                        let path = match &attr.path {
                            Some(p) => here.file_dir.join(p),
                            None if here.dir.join(format!("{name}.rs")).exists() => here.dir.join(format!("{name}.rs")),
                            None => here.dir.join(name).join("mod.rs"),
                        };
                        let owns = path.file_name().is_some_and(|f| f == "mod.rs");
                        self.read_file(&path, child, owns);
                        i = k + 3;
                    } else {
                        let end = matching(t, k + 2);
                        let inner = Here {
                            file: here.file,
                            dir: here.dir.join(name),
                            file_dir: here.file_dir.clone(),
                        };
                        self.walk(t, k + 3, end, &child, &inner);
                        i = end + 1;
                    }
                    continue;
                }
                (Some(Tok::Ident(u)), ..) if u == "use" => {
                    let end = (k..to).find(|&x| t[x].0 == Tok::Punct(";")).unwrap_or(to);
                    let mut leaves = Vec::new();
                    use_tree(t, k + 1, end, Vec::new(), &mut leaves);
                    for (segs, name, glob) in leaves {
                        let Some(abs) = self.absolute(module, &segs, &aliases) else {
                            continue;
                        };
                        let text = segs.join("::");
                        self.refs.push(Ref {
                            from: module.clone(),
                            segs: abs.clone(),
                            line: t[k].1,
                            text,
                        });
                        if glob {
                            if is_pub {
                                self.globs.entry(module.clone()).or_default().push(abs);
                            }
                        } else {
                            aliases.insert(name.clone(), abs.clone());
                            if is_pub {
                                self.reexports.insert((module.clone(), name), abs);
                            }
                        }
                    }
                    i = end + 1;
                    continue;
                }
                (Some(Tok::Ident(d)), Some(Tok::Punct("!")), Some(Tok::Ident(name))) if d == "macro_rules" => {
                    self.macros.insert(name.clone(), here.file);
                }
                (Some(Tok::Ident(d)), Some(Tok::Ident(name)), _) if DEFINERS.contains(&d.as_str()) => {
                    self.defines.entry(module.clone()).or_default().insert(name.clone());
                }
                _ => {}
            }
            // Any other path that starts in this crate.
            if let Some((segs, next)) = path_at(t, k, to) {
                if let Some(abs) = self.absolute(module, &segs, &aliases) {
                    self.refs.push(Ref {
                        from: module.clone(),
                        segs: abs,
                        line: t[k].1,
                        text: segs.join("::"),
                    });
                }
                i = next;
            } else {
                i = k + 1;
            }
        }
    }

    /// `segs` made absolute, if it names something of this crate.
    fn absolute(
        &self,
        module: &ModPath,
        segs: &[String],
        aliases: &HashMap<String, Vec<String>>,
    ) -> Option<Vec<String>> {
        let first = segs.first()?;
        let mut abs: Vec<String> = match first.as_str() {
            "crate" | "$crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let mut m = module.clone();
                let mut n = 0;
                while segs.get(n).is_some_and(|s| s == "super") {
                    m.pop();
                    n += 1;
                }
                m.extend(segs[n..].iter().cloned());
                return Some(m);
            }
            other => aliases.get(other)?.clone(),
        };
        abs.extend(segs[1..].iter().cloned());
        Some(abs)
    }

    /// The files a path passes through to what it names: each module whose
    /// `pub use` it goes through (a change there breaks it as surely), then
    /// the file that defines the item.
    fn files_of(&self, segs: &[String], depth: usize, out: &mut Vec<usize>) {
        // The deepest prefix that is a module.
        let mut n = segs.len();
        while n > 0 && !self.modules.contains_key(&segs[..n]) {
            n -= 1;
        }
        let module = segs[..n].to_vec();
        let here = self.modules[&module];
        let Some(item) = segs.get(n) else { return out.push(here) };
        if depth > 16 || self.defines.get(&module).is_some_and(|d| d.contains(item)) {
            return out.push(here);
        }
        if let Some(target) = self.reexports.get(&(module.clone(), item.clone())) {
            let mut next = target.clone();
            next.extend(segs[n + 1..].iter().cloned());
            out.push(here);
            return self.files_of(&next, depth + 1, out);
        }
        for glob in self.globs.get(&module).into_iter().flatten() {
            if self.knows(glob, item, depth + 1) {
                let mut next = glob.clone();
                next.extend(segs[n..].iter().cloned());
                out.push(here);
                return self.files_of(&next, depth + 1, out);
            }
        }
        if module.is_empty() {
            if let Some(&file) = self.macros.get(item) {
                return out.push(file);
            }
        }
        out.push(here)
    }

    /// Whether `module` defines or re-exports `item`.
    fn knows(&self, module: &[String], item: &String, depth: usize) -> bool {
        depth < 16
            && (self.defines.get(module).is_some_and(|d| d.contains(item))
                || self.reexports.contains_key(&(module.to_vec(), item.clone()))
                || self
                    .globs
                    .get(module)
                    .into_iter()
                    .flatten()
                    .any(|g| self.knows(g, item, depth + 1)))
    }

    /// File → file edges, each with the references that make it.
    fn edges(&self) -> BTreeMap<(usize, usize), Vec<&Ref>> {
        let mut edges: BTreeMap<(usize, usize), Vec<&Ref>> = BTreeMap::new();
        for r in &self.refs {
            let from = self.modules[&r.from];
            let mut through = Vec::new();
            self.files_of(&r.segs, 0, &mut through);
            for to in through {
                let to_ancestor = r.from.starts_with(&self.file_modules[to]);
                if from != to && !to_ancestor {
                    let refs = edges.entry((from, to)).or_default();
                    if !refs.iter().any(|x| std::ptr::eq(*x, r)) {
                        refs.push(r);
                    }
                }
            }
        }
        edges
    }

    /// Sets of two or more files that reach one another (Tarjan's algorithm).
    fn circles(&self) -> Vec<Vec<usize>> {
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b) in self.edges().keys() {
            next[a].push(b);
        }
        let mut t = Tarjan {
            next,
            index: vec![None; n],
            low: vec![0; n],
            on: vec![false; n],
            stack: vec![],
            count: 0,
            out: vec![],
        };
        for v in 0..n {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        t.out.into_iter().filter(|c| c.len() > 1).collect()
    }

    fn name(&self, f: usize, top: &Path) -> String {
        self.files[f]
            .strip_prefix(top)
            .unwrap_or(&self.files[f])
            .display()
            .to_string()
    }

    fn describe(&self, circle: &[usize], top: &Path) -> String {
        let name = |f: usize| self.name(f, top);
        let mut names: Vec<String> = circle.iter().map(|&f| name(f)).collect();
        names.sort();
        let mut s = format!("circle of {} files: {}\n", names.len(), names.join(", "));
        for ((a, b), refs) in self.edges() {
            if circle.contains(&a) && circle.contains(&b) {
                let lines: Vec<String> = refs
                    .iter()
                    .take(3)
                    .map(|r| format!("{}:{} ({})", name(a), r.line, r.text))
                    .collect();
                s += &format!("  {} -> {}: {}\n", name(a), name(b), lines.join(", "));
            }
        }
        s
    }
}

struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on: Vec<bool>,
    stack: Vec<usize>,
    count: usize,
    out: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.count);
        self.low[v] = self.count;
        self.count += 1;
        self.stack.push(v);
        self.on[v] = true;
        for w in self.next[v].clone() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on[w] => self.low[v] = self.low[v].min(i),
                _ => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut c = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            self.out.push(c);
        }
    }
}

// ---- small parsers over tokens ------------------------------------------------------

struct Attrs {
    next: usize,
    cfg_test: bool,
    path: Option<String>,
    /// The paths written inside the attributes (`#[error("{}", crate::x::f(..))]`,
    /// `#[arg(default_missing_value = crate::DIR)]`, `#[serde(with = "crate::m")]`),
    /// each with the index of its first token: they are uses like any other.
    paths: Vec<(Vec<String>, usize)>,
}

/// The outer attributes starting at `i`: whether one is `#[cfg(test)]`, a
/// `#[path]`, and every path written inside them.
fn attributes(t: &[(Tok, usize)], mut i: usize) -> Attrs {
    let mut a = Attrs {
        next: i,
        cfg_test: false,
        path: None,
        paths: Vec::new(),
    };
    while t.get(i).map(|x| &x.0) == Some(&Tok::Punct("#")) && t.get(i + 1).map(|x| &x.0) == Some(&Tok::Punct("[")) {
        let end = matching(t, i + 1);
        let body: Vec<&Tok> = t[i + 2..end].iter().map(|x| &x.0).collect();
        let ident = |k: usize, s: &str| matches!(body.get(k), Some(Tok::Ident(x)) if x == s);
        if ident(0, "cfg") && ident(2, "test") && body.len() == 4 {
            a.cfg_test = true;
        }
        if ident(0, "path") {
            if let Some(Tok::Str(p)) = body.get(2) {
                a.path = Some(p.clone());
            }
        } else {
            a.paths.extend(attribute_paths(t, i + 2, end));
        }
        i = end + 1;
        a.next = i;
    }
    a
}

/// The paths in an attribute's tokens `t[from..to]`: those written as code,
/// and those written as a string that holds nothing but a path (serde's
/// `with = "crate::m"`, clap's `value_parser = "…"`).
fn attribute_paths(t: &[(Tok, usize)], from: usize, to: usize) -> Vec<(Vec<String>, usize)> {
    let mut out = Vec::new();
    let mut k = from;
    while k < to {
        if let Some((segs, next)) = path_at(t, k, to) {
            out.push((segs, k));
            k = next;
            continue;
        }
        if let Tok::Str(s) = &t[k].0 {
            let segs: Vec<String> = s.split("::").map(str::to_string).collect();
            let ident = |x: &String| {
                !x.is_empty()
                    && x.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !x.starts_with(|c: char| c.is_ascii_digit())
            };
            if segs.len() > 1 && segs.iter().all(ident) {
                out.push((segs, k));
            }
        }
        k += 1;
    }
    out
}

/// Past `pub`, `pub(crate)`, `pub(super)`, `pub(in …)`.
fn skip_visibility(t: &[(Tok, usize)], i: usize) -> usize {
    if t.get(i + 1).map(|x| &x.0) == Some(&Tok::Punct("(")) {
        matching(t, i + 1) + 1
    } else {
        i + 1
    }
}

/// The index of the bracket that closes the one at `open`.
fn matching(t: &[(Tok, usize)], open: usize) -> usize {
    let mut depth = 0i32;
    for (k, (tok, _)) in t.iter().enumerate().skip(open) {
        match tok {
            Tok::Punct("{" | "(" | "[") => depth += 1,
            Tok::Punct("}" | ")" | "]") => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    t.len()
}

/// Past one item: to its `;` or the end of its outermost `{…}`.
fn skip_item(t: &[(Tok, usize)], mut i: usize, to: usize) -> usize {
    while i < to {
        match t[i].0 {
            Tok::Punct(";") => return i + 1,
            Tok::Punct("{") => return matching(t, i) + 1,
            Tok::Punct("(" | "[") => i = matching(t, i) + 1,
            _ => i += 1,
        }
    }
    to
}

/// A path `a::b::c` starting at `i` (two segments at least): its segments and the index after it.
fn path_at(t: &[(Tok, usize)], i: usize, to: usize) -> Option<(Vec<String>, usize)> {
    let mut segs = Vec::new();
    let mut k = i;
    while k < to {
        let Tok::Ident(s) = &t[k].0 else { break };
        segs.push(s.clone());
        if t.get(k + 1).map(|x| &x.0) != Some(&Tok::Punct("::")) {
            k += 1;
            break;
        }
        k += 2;
    }
    (segs.len() > 1).then_some((segs, k))
}

/// The leaves of a use tree in `t[i..end]`: (full path, name it binds, is a glob).
fn use_tree(
    t: &[(Tok, usize)],
    mut i: usize,
    end: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, String, bool)>,
) -> usize {
    if t.get(i).map(|x| &x.0) == Some(&Tok::Punct("::")) {
        i += 1;
    }
    while i < end {
        match &t[i].0 {
            Tok::Ident(s) if s == "as" => {
                if let (Some((path, _, _)), Some((Tok::Ident(alias), _))) = (out.last_mut(), t.get(i + 1)) {
                    if path == &prefix {
                        let path = path.clone();
                        out.pop();
                        out.push((path, alias.clone(), false));
                    }
                }
                i += 2;
            }
            Tok::Ident(s) => {
                prefix.push(s.clone());
                if t.get(i + 1).map(|x| &x.0) == Some(&Tok::Punct("::")) {
                    i += 2;
                    continue;
                }
                let name = if s == "self" {
                    prefix[prefix.len().saturating_sub(2)].clone()
                } else {
                    s.clone()
                };
                let path: Vec<String> = if s == "self" {
                    prefix[..prefix.len() - 1].to_vec()
                } else {
                    prefix.clone()
                };
                out.push((path.clone(), name, false));
                prefix = path;
                i += 1;
            }
            Tok::Punct("*") => {
                out.push((prefix.clone(), String::new(), true));
                i += 1;
            }
            Tok::Punct("{") => {
                let close = matching(t, i);
                let mut k = i + 1;
                while k < close {
                    k = use_tree(t, k, close, prefix.clone(), out);
                    k += 1; // the comma
                }
                return close + 1;
            }
            Tok::Punct(",") | Tok::Punct("}") => return i,
            _ => i += 1,
        }
    }
    i
}

// ---- the check checks ---------------------------------------------------------------

#[cfg(test)]
mod checks {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempdir::Dir, Crate) {
        let dir = tempdir::Dir::new();
        for (name, text) in files {
            let p = dir.0.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let krate = Crate::read(&dir.0.join("lib.rs"));
        (dir, krate)
    }

    fn circle_names(k: &Crate) -> Vec<Vec<String>> {
        k.circles()
            .iter()
            .map(|c| {
                let mut v: Vec<String> = c
                    .iter()
                    .map(|&f| k.files[f].file_name().unwrap().to_string_lossy().into_owned())
                    .collect();
                v.sort();
                v
            })
            .collect()
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let p = std::env::temp_dir().join(format!("circles-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_planted_circle_is_reported_with_its_files_and_lines() {
        let (dir, k) = tree(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "pub struct B;\n\nfn f() { let _ = crate::a::A; }\n"),
            ("c.rs", "use super::a::A;\n"),
        ]);
        assert_eq!(circle_names(&k), vec![vec!["a.rs", "b.rs"]]);
        let text = k.describe(&k.circles()[0], &dir.0);
        assert!(text.contains("a.rs -> b.rs: a.rs:1 (crate::b::B)"), "{text}");
        assert!(text.contains("b.rs -> a.rs: b.rs:3 (crate::a::A)"), "{text}");
    }

    #[test]
    fn paths_inside_attributes_make_edges() {
        // a names b only inside attributes: as code in one, as a string in
        // another; b uses a. Both close a circle. A cfg(test) item's
        // attributes make none.
        for a in [
            "#[derive(Debug)]\n#[error(\"{}\", crate::b::place())]\npub struct A;\n",
            "#[serde(with = \"crate::b\")]\npub struct A;\n",
            "pub enum A {\n    #[arg(default_missing_value = crate::b::DIR)]\n    X,\n}\n",
        ] {
            let (dir, k) = tree(&[
                ("lib.rs", "mod a;\nmod b;\n"),
                ("a.rs", a),
                (
                    "b.rs",
                    "pub const DIR: &str = \"d\";\npub fn place() {}\nfn f() { let _ = crate::a::A; }\n",
                ),
            ]);
            assert_eq!(circle_names(&k), vec![vec!["a.rs", "b.rs"]], "{a}");
            let text = k.describe(&k.circles()[0], &dir.0);
            assert!(text.contains("a.rs -> b.rs: a.rs:"), "{text}");
        }
        let (_dir, k) = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "pub struct A;\n#[cfg(test)]\n#[x(crate::b::place)]\nfn t() {}\n",
            ),
            ("b.rs", "pub fn place() {}\nfn f() { let _ = crate::a::A; }\n"),
        ]);
        assert!(k.circles().is_empty(), "{:?}", circle_names(&k));
    }

    #[test]
    fn a_re_export_is_followed_to_the_defining_file() {
        // lib.rs re-exports b's item and uses a; a uses the item through the
        // root: a depends on b, not on lib.rs.
        let (_dir, k) = tree(&[
            ("lib.rs", "mod a;\nmod b;\npub use b::{Error as E, *};\npub use a::A;\n"),
            ("a.rs", "use crate::E;\nuse crate::Other;\npub struct A(E, Other);\n"),
            ("b.rs", "pub enum Error {}\npub struct Other;\n"),
        ]);
        assert!(k.circles().is_empty(), "{:?}", circle_names(&k));
    }

    #[test]
    fn module_aliases_folders_and_path_attributes_are_followed() {
        let (_dir, k) = tree(&[
            ("lib.rs", "pub mod t;\nmod w;\n"),
            ("t/mod.rs", "mod x;\n#[path = \"y_impl.rs\"]\nmod y;\n"),
            ("t/x.rs", "use crate::w;\nfn f() { w::World::new(); }\n"),
            ("t/y_impl.rs", "pub struct Y;\n"),
            (
                "w.rs",
                "use crate::t;\npub struct World;\nfn g() -> t::x::Thing { todo!() }\n",
            ),
        ]);
        assert_eq!(circle_names(&k), vec![vec!["w.rs", "x.rs"]]);
        assert!(k.files.iter().any(|f| f.ends_with("t/y_impl.rs")));
    }

    #[test]
    fn a_child_may_use_its_parents_items() {
        let (_dir, k) = tree(&[
            ("lib.rs", "mod job;\n"),
            (
                "job/mod.rs",
                "mod local;\npub enum Event {}\nfn run() { local::start(); }\n",
            ),
            (
                "job/local.rs",
                "use super::Event;\npub fn start() -> Option<Event> { None }\n",
            ),
        ]);
        assert!(k.circles().is_empty(), "{:?}", circle_names(&k));
    }

    #[test]
    fn test_code_comments_and_strings_make_no_edges() {
        let (_dir, k) = tree(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "pub fn f() { crate::b::g(); }\n"),
            (
                "b.rs",
                "pub fn g() {}\n// crate::a::f\n/* crate::a::f */\nconst S: &str = \"crate::a::f\";\nconst R: &str = r#\"crate::a::f\"#;\n\
                 fn h<'a>(c: char) -> bool { c == '\"' }\n#[cfg(test)]\nmod tests { fn t() { crate::a::f(); } }\n",
            ),
        ]);
        assert!(k.circles().is_empty(), "{:?}", circle_names(&k));
    }
}
