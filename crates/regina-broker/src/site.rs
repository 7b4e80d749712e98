//! The dashboard's files (http-api.md §7 `WEBAPP_ROOT`): those of `dashboard/dist` embedded at
//! build time, a directory read at each request, or none. `http/webapp.rs` serves them.

use std::borrow::Cow;
use std::path::PathBuf;

use crate::config::WebappRoot;
use crate::error::Error;

/// `dashboard/dist` as it was when this crate was built; empty when it had not been built.
#[derive(rust_embed::RustEmbed)]
#[folder = "../../dashboard/dist"]
#[allow_missing = true]
struct BuiltIn;

/// The single page every client-side route is served.
pub(crate) const INDEX: &str = "index.html";

/// Where the dashboard's files come from, fixed at startup from `WEBAPP_ROOT`.
#[derive(Clone, Debug)]
pub(crate) enum Site {
    /// The files embedded at build time.
    BuiltIn,
    /// The files of this directory.
    Directory(PathBuf),
    /// No dashboard.
    Off,
}

impl Site {
    /// The site of `WEBAPP_ROOT`.
    ///
    /// # Errors
    /// [`Error::Config`] when a directory is named that holds no `index.html`.
    pub(crate) fn open(root: &WebappRoot) -> Result<Site, Error> {
        match root {
            WebappRoot::BuiltIn => Ok(Site::BuiltIn),
            WebappRoot::Off => Ok(Site::Off),
            WebappRoot::Directory(dir) if dir.join(INDEX).is_file() => {
                Ok(Site::Directory(dir.clone()))
            }
            WebappRoot::Directory(dir) => Err(Error::Config(format!(
                "WEBAPP_ROOT: {} holds no {INDEX}",
                dir.display()
            ))),
        }
    }

    /// The bytes of a file; `relative` is a checked relative path, below the root.
    pub(crate) async fn file(&self, relative: &str) -> Option<Cow<'static, [u8]>> {
        match self {
            Site::BuiltIn => BuiltIn::get(relative).map(|file| file.data),
            // Reading a directory fails, so only regular files (or links to them) are served.
            Site::Directory(root) => tokio::fs::read(root.join(relative))
                .await
                .ok()
                .map(Cow::Owned),
            Site::Off => None,
        }
    }
}
