//! Secret settings (the encryption key, the JWT secret): kept out of `Debug` output and logs.

/// A secret setting: kept out of `Debug` output and logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_value() {
        assert_eq!(format!("{:?}", Secret("hunter2".into())), "Secret(..)");
    }
}
