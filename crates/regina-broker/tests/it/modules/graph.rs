//! The graph of a crate's top-level modules: an edge `a → b` for every path in `a`'s files that
//! names `b` (`crate::b::…`, `super::b::…` resolved from the file's module, `crate::{b, …}`, or
//! `crate::Name` where the crate root re-exports `Name` from `b`). Cycles are its strongly
//! connected components of more than one module.

use std::collections::{BTreeMap, BTreeSet};

use super::lex::{tokens, Kind, Token};

/// Where an edge was seen: a file of the crate (relative to `src/`), a line, the path's head.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Evidence {
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) path: String,
}

/// One crate root (`lib.rs` or `main.rs`) and the modules it declares.
#[derive(Debug, Default)]
pub(crate) struct ModuleGraph {
    /// The top-level modules the root declares.
    pub(crate) modules: BTreeSet<String>,
    /// `from → to → where`.
    pub(crate) edges: BTreeMap<String, BTreeMap<String, Vec<Evidence>>>,
}

impl ModuleGraph {
    /// Builds the graph of the root file `root` (its source) over `files`: paths relative to
    /// `src/` (`db/mod.rs`, `http/push.rs`, …) with their sources. Files of modules the root
    /// does not declare are ignored (another root of the same `src/` may declare them).
    pub(crate) fn build(root: &str, files: &BTreeMap<String, String>) -> ModuleGraph {
        let root_tokens = tokens(root);
        let modules = declared_modules(&root_tokens);
        let reexports = root_uses(&root_tokens, &modules);
        let mut graph = ModuleGraph {
            modules,
            edges: BTreeMap::new(),
        };
        for (file, source) in files {
            let Some(path) = module_path(file) else {
                continue;
            };
            if !graph.modules.contains(&path[0]) {
                continue;
            }
            let scan = FileScan {
                file,
                module: &path,
                modules: &graph.modules,
                reexports: &reexports,
            };
            for (target, evidence) in scan.references(&tokens(source)) {
                if target != path[0] {
                    graph
                        .edges
                        .entry(path[0].clone())
                        .or_default()
                        .entry(target)
                        .or_default()
                        .push(evidence);
                }
            }
        }
        graph
    }

    /// Whether `from` imports from `to`.
    pub(crate) fn has_edge(&self, from: &str, to: &str) -> bool {
        self.edges
            .get(from)
            .is_some_and(|to_map| to_map.contains_key(to))
    }

    /// The cycles: each strongly connected component of more than one module, sorted.
    pub(crate) fn cycles(&self) -> Vec<Vec<String>> {
        let mut tarjan = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            next: 0,
            components: Vec::new(),
        };
        for module in &self.modules {
            if !tarjan.index.contains_key(module.as_str()) {
                tarjan.visit(module);
            }
        }
        let mut cycles: Vec<Vec<String>> = tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|mut c| {
                c.sort();
                c
            })
            .collect();
        cycles.sort();
        cycles
    }

    /// The edges inside `cycle`, one line each with its first evidence, for a failure message.
    pub(crate) fn explain(&self, cycle: &[String]) -> String {
        let mut lines = Vec::new();
        for from in cycle {
            for (to, evidence) in self.edges.get(from).into_iter().flatten() {
                if cycle.contains(to) {
                    let first = &evidence[0];
                    lines.push(format!(
                        "  {from} → {to}: {} ({}:{}){}",
                        first.path,
                        first.file,
                        first.line,
                        match evidence.len() {
                            1 => String::new(),
                            n => format!(" and {} more", n - 1),
                        }
                    ));
                }
            }
        }
        lines.join("\n")
    }
}

/// The module path of a file relative to `src/`: `db/mod.rs` → `[db]`, `http/push.rs` →
/// `[http, push]`. `None` for the roots and for anything that is not a Rust file.
fn module_path(file: &str) -> Option<Vec<String>> {
    let stem = file.strip_suffix(".rs")?;
    let mut path: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    match path.as_slice() {
        [] => None,
        [only] if only == "lib" || only == "main" => None,
        _ => Some(path),
    }
}

/// `mod name;` declarations at the root's top level (inline `mod name { … }` too).
fn declared_modules(tokens: &[Token]) -> BTreeSet<String> {
    let mut modules = BTreeSet::new();
    let mut depth = 0usize;
    for (at, token) in tokens.iter().enumerate() {
        match &token.kind {
            Kind::Punct('{') => depth += 1,
            Kind::Punct('}') => depth = depth.saturating_sub(1),
            _ if depth == 0 && token.is_ident("mod") => {
                if let Some(name) = tokens.get(at + 1).and_then(Token::ident) {
                    modules.insert(name.to_owned());
                }
            }
            _ => {}
        }
    }
    modules
}

/// Names the root brings into scope with `use` (public or not: descendants see both), mapped
/// to the top-level module they come from.
fn root_uses(tokens: &[Token], modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let mut depth = 0usize;
    let mut at = 0;
    while at < tokens.len() {
        match &tokens[at].kind {
            Kind::Punct('{') => depth += 1,
            Kind::Punct('}') => depth = depth.saturating_sub(1),
            _ if depth == 0 && tokens[at].is_ident("use") => {
                let mut leaves = Vec::new();
                let mut cursor = at + 1;
                use_tree(tokens, &mut cursor, None, &mut leaves);
                for (name, first) in leaves {
                    if modules.contains(&first) {
                        names.insert(name, first);
                    }
                }
            }
            _ => {}
        }
        at += 1;
    }
    names
}

/// Reads one use tree from `at`: each leaf's binding (its alias or last segment) with the first
/// segment of its full path (`crate` and `self` skipped).
fn use_tree(
    tokens: &[Token],
    at: &mut usize,
    prefix_first: Option<String>,
    leaves: &mut Vec<(String, String)>,
) {
    let mut first = prefix_first;
    while let Some(token) = tokens.get(*at) {
        match &token.kind {
            Kind::PathSep => *at += 1,
            Kind::Ident(segment) => {
                *at += 1;
                if first.is_none() && segment != "crate" && segment != "self" {
                    first = Some(segment.clone());
                }
                if tokens.get(*at).is_some_and(|t| t.kind == Kind::PathSep) {
                    continue;
                }
                let mut binding = segment.clone();
                if tokens.get(*at).is_some_and(|t| t.is_ident("as")) {
                    binding = tokens
                        .get(*at + 1)
                        .and_then(Token::ident)
                        .unwrap_or("_")
                        .into();
                    *at += 2;
                }
                if let Some(first) = first {
                    leaves.push((binding, first));
                }
                return;
            }
            Kind::Punct('{') => {
                *at += 1;
                while tokens.get(*at).is_some_and(|t| !t.is_punct('}')) {
                    use_tree(tokens, at, first.clone(), leaves);
                    if tokens.get(*at).is_some_and(|t| t.is_punct(',')) {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            _ => return,
        }
    }
}

/// The references of one file of a top-level module.
struct FileScan<'a> {
    file: &'a str,
    /// The file's module path (`[http, push]`).
    module: &'a [String],
    modules: &'a BTreeSet<String>,
    reexports: &'a BTreeMap<String, String>,
}

impl FileScan<'_> {
    /// Every top-level module a path of the file names, with where.
    fn references(&self, tokens: &[Token]) -> Vec<(String, Evidence)> {
        let mut found = Vec::new();
        // Inline modules (`mod tests { … }`) deepen the module path that `super` climbs.
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        for (at, token) in tokens.iter().enumerate() {
            match &token.kind {
                Kind::Punct('{') => {
                    depth += 1;
                    if let (Some(keyword), Some(name)) = (
                        at.checked_sub(2).map(|k| &tokens[k]),
                        at.checked_sub(1).and_then(|k| tokens[k].ident()),
                    ) {
                        if keyword.is_ident("mod") {
                            inline.push((name.to_owned(), depth));
                        }
                    }
                }
                Kind::Punct('}') => {
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                Kind::Ident(name) if matches!(name.as_str(), "crate" | "super" | "self") => {
                    let here: Vec<String> = self
                        .module
                        .iter()
                        .cloned()
                        .chain(inline.iter().map(|(name, _)| name.clone()))
                        .collect();
                    found.extend(self.path_at(tokens, at, &here));
                }
                _ => {}
            }
        }
        found
    }

    /// The top-level modules named by a path starting at `at` (`crate::`, `super::`, `self::`),
    /// seen from module `here`. Several for a use group.
    fn path_at(&self, tokens: &[Token], at: usize, here: &[String]) -> Vec<(String, Evidence)> {
        let before = at.checked_sub(1).map(|k| &tokens[k].kind);
        // `$crate` in macros and the tail of a longer path are not path heads.
        if matches!(before, Some(Kind::Punct('$') | Kind::PathSep)) {
            return Vec::new();
        }
        let Some(mut base) = (match tokens[at].ident() {
            Some("crate") => Some(Vec::new()),
            Some("super" | "self") => Some(here.to_vec()),
            _ => None,
        }) else {
            return Vec::new();
        };
        let mut cursor = at;
        let mut head = String::new();
        while tokens
            .get(cursor + 1)
            .is_some_and(|t| t.kind == Kind::PathSep)
        {
            let segment = match tokens[cursor].ident() {
                Some(segment @ ("crate" | "self" | "super")) => segment,
                _ => break,
            };
            // `super` above the crate root does not compile; such a path names nothing.
            if segment == "super" && base.pop().is_none() {
                return Vec::new();
            }
            head.push_str(segment);
            head.push_str("::");
            cursor += 2;
        }
        if cursor == at {
            return Vec::new();
        }
        let names: Vec<String> = match tokens.get(cursor).map(|t| &t.kind) {
            Some(Kind::Ident(name)) => vec![name.clone()],
            Some(Kind::Punct('{')) => group_heads(tokens, cursor),
            _ => Vec::new(),
        };
        let line = tokens[at].line;
        names
            .into_iter()
            .filter_map(|name| {
                let target = self.top_level(&base, &name)?;
                let evidence = Evidence {
                    file: self.file.to_owned(),
                    line,
                    path: format!("{head}{name}"),
                };
                Some((target, evidence))
            })
            .collect()
    }

    /// The top-level module that `name` under `base` belongs to, if any.
    fn top_level(&self, base: &[String], name: &str) -> Option<String> {
        match base.first() {
            Some(first) => Some(first.clone()),
            None if self.modules.contains(name) => Some(name.to_owned()),
            None => self.reexports.get(name).cloned(),
        }
    }
}

/// The first identifier of each branch of the use group opening at `open`.
fn group_heads(tokens: &[Token], open: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut expect_head = true;
    for token in &tokens[open..] {
        match &token.kind {
            Kind::Punct('{') => {
                depth += 1;
                expect_head = depth == 1;
            }
            Kind::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Kind::Punct(',') if depth == 1 => expect_head = true,
            Kind::Ident(name) if expect_head && depth == 1 => {
                heads.push(name.clone());
                expect_head = false;
            }
            _ => expect_head = false,
        }
    }
    heads
}

/// Tarjan's strongly connected components over the module graph.
struct Tarjan<'a> {
    graph: &'a ModuleGraph,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    next: usize,
    components: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, module: &'a str) {
        self.index.insert(module, self.next);
        self.low.insert(module, self.next);
        self.next += 1;
        self.stack.push(module);
        self.on_stack.insert(module);
        let graph = self.graph;
        for to in graph.edges.get(module).into_iter().flat_map(BTreeMap::keys) {
            let to = to.as_str();
            if !self.index.contains_key(to) {
                self.visit(to);
                let low = self.low[module].min(self.low[to]);
                self.low.insert(module, low);
            } else if self.on_stack.contains(to) {
                let low = self.low[module].min(self.index[to]);
                self.low.insert(module, low);
            }
        }
        if self.low[module] == self.index[module] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(member);
                component.push(member.to_owned());
                if member == module {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
