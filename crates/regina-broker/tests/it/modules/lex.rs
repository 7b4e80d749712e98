//! Rust source reduced to the tokens that make up paths: identifiers, `::` and the punctuation
//! that delimits use trees and inline modules. The source is tokenized by `proc-macro2` (the
//! compiler's own token rules); comments, strings and character literals are dropped, so a path
//! written in a doc comment or a message is never taken for an import.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// One token with the line it starts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) line: usize,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// An identifier or keyword (raw identifiers without their `r#`).
    Ident(String),
    /// `::`.
    PathSep,
    /// Any other single character outside literals and comments.
    Punct(char),
}

impl Token {
    /// Whether this token is the identifier `name`.
    pub(super) fn is_ident(&self, name: &str) -> bool {
        matches!(&self.kind, Kind::Ident(ident) if ident == name)
    }

    /// Whether this token is the punctuation `c`.
    pub(super) fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }

    /// The identifier, if this token is one.
    pub(super) fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(ident) => Some(ident),
            _ => None,
        }
    }
}

/// The tokens of `source`, in order; delimiters of groups become `Punct` tokens of their own.
pub(super) fn tokens(source: &str) -> Vec<Token> {
    let stream: TokenStream = source.parse().expect("the source tokenizes");
    let mut out = Vec::new();
    flatten(stream, &mut out);
    out
}

fn flatten(stream: TokenStream, out: &mut Vec<Token>) {
    let mut joint_colon = false;
    for tree in stream {
        let line = tree.span().start().line;
        let after_joint_colon = std::mem::take(&mut joint_colon);
        match tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Brace => (Some('{'), Some('}')),
                    Delimiter::Bracket => (Some('['), Some(']')),
                    Delimiter::Parenthesis => (Some('('), Some(')')),
                    Delimiter::None => (None, None),
                };
                if let Some(c) = open {
                    out.push(Token {
                        kind: Kind::Punct(c),
                        line,
                    });
                }
                flatten(group.stream(), out);
                if let Some(c) = close {
                    let line = group.span_close().start().line;
                    out.push(Token {
                        kind: Kind::Punct(c),
                        line,
                    });
                }
            }
            TokenTree::Ident(ident) => {
                let name = ident.to_string();
                let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
                out.push(Token {
                    kind: Kind::Ident(name),
                    line,
                });
            }
            TokenTree::Punct(punct) => {
                let c = punct.as_char();
                if c == ':' && after_joint_colon {
                    // The second half of `::`: the first was pushed as a `:` and becomes the separator.
                    out.last_mut().expect("the first colon").kind = Kind::PathSep;
                } else {
                    joint_colon = c == ':' && punct.spacing() == Spacing::Joint;
                    out.push(Token {
                        kind: Kind::Punct(c),
                        line,
                    });
                }
            }
            TokenTree::Literal(_) => {}
        }
    }
}
