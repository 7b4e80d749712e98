//! How every group of settings is read from the command line: the boolean spellings of
//! http-api.md §7, and a group's defaults read back from its declaration.

/// The settings `T` given no flag and no environment variable: the defaults of its `#[arg]`s.
///
/// # Panics
/// When a default does not parse or a setting without one is required: a mistake in `T`'s
/// declaration, which every test that builds a default configuration finds.
pub(crate) fn command_line_defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("defaults"))
        .mut_args(|arg| arg.env(None::<&'static str>));
    command
        .try_get_matches_from(["defaults"])
        .and_then(|matches| T::from_arg_matches(&matches))
        .unwrap_or_else(|e| panic!("the settings' defaults do not parse: {e}"))
}

/// `true/1/yes/on` or `false/0/no/off`, case-insensitive (http-api.md §7).
pub(crate) fn parse_flag(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        other => Err(format!(
            "not a boolean: {other:?} (true/false, 1/0, yes/no, on/off)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_the_spec_spellings() {
        assert_eq!(parse_flag("ON"), Ok(true));
        assert_eq!(parse_flag(" yes "), Ok(true));
        assert_eq!(parse_flag("0"), Ok(false));
        assert!(parse_flag("maybe").is_err());
    }
}
