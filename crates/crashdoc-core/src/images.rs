//! What an image runs when the pod spec sets no `command` and no `args`,
//! for the images whose default process is a shell or an interactive
//! interpreter (`catalog/images.yaml`, each default read from the image's
//! Dockerfile). Without a terminal or an open stdin such a process reads
//! end-of-file and exits 0 at once: under a controller that expects a
//! service that is `exit-zero`. The exit-zero rule and `crashdoc lint`'s
//! `image/default-shell` check read it.

use serde::Deserialize;
use std::sync::LazyLock;

const FILE: (&str, &str) = (
    "images.yaml",
    include_str!(concat!(env!("OUT_DIR"), "/catalog/images.json")),
);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[allow(dead_code)] // read for the file's shape, like the catalog's
    family: String,
    images: Vec<DefaultImage>,
}

/// What kind of process the image's default is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Process {
    /// A shell (`sh`, `bash`).
    Shell,
    /// An interpreter's interactive prompt (`python3`, `node`, `irb`).
    Repl,
}

impl Process {
    pub fn words(self) -> &'static str {
        match self {
            Process::Shell => "a shell",
            Process::Repl => "an interactive interpreter",
        }
    }
}

/// One image of `catalog/images.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultImage {
    /// The repository on Docker Hub (`busybox`, official: `library/busybox`).
    pub name: String,
    #[serde(default)]
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub process: Process,
    /// Words of a tag whose variant runs a server instead (`fpm`).
    #[serde(default)]
    pub server_tags: Vec<String>,
    /// The Dockerfile (or image config) the default is read from.
    pub source: String,
}

impl DefaultImage {
    /// The default process as a command line (`docker-entrypoint.sh node`).
    pub fn command_line(&self) -> String {
        self.entrypoint
            .iter()
            .chain(&self.cmd)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

static ALL: LazyLock<Vec<DefaultImage>> = LazyLock::new(|| {
    serde_json::from_str::<RawFile>(FILE.1)
        .map(|f| f.images)
        .unwrap_or_default()
});

/// Every image of the file (empty when it does not parse; a test rules that out).
pub fn all() -> &'static [DefaultImage] {
    &ALL
}

/// An image reference taken apart: `registry/path:tag@digest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef<'a> {
    /// `None` for Docker Hub's default (`busybox`, `library/busybox`).
    pub registry: Option<&'a str>,
    /// The repository path (`library/busybox`, `acme/web`).
    pub path: &'a str,
    pub tag: Option<&'a str>,
    pub digest: Option<&'a str>,
}

/// The registry names that are Docker Hub.
const DOCKER_HUB: &[&str] = &["docker.io", "index.docker.io", "registry-1.docker.io"];

impl<'a> ImageRef<'a> {
    /// Read a reference as the distribution reference grammar has it
    /// (distribution/reference: the first component is a registry when it
    /// holds a `.` or a `:` or is `localhost`).
    pub fn parse(image: &'a str) -> Option<Self> {
        let image = image.trim();
        if image.is_empty() || image.contains(char::is_whitespace) {
            return None;
        }
        let (rest, digest) = match image.split_once('@') {
            Some((r, d)) => (r, Some(d)),
            None => (image, None),
        };
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[slash..].rfind(':') {
            Some(c) => (&rest[..slash + c], Some(&rest[slash + c + 1..])),
            None => (rest, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, path))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (Some(first), path)
            }
            _ => (None, name),
        };
        if path.is_empty() {
            return None;
        }
        Some(ImageRef {
            registry: registry.filter(|r| !DOCKER_HUB.contains(r)),
            path,
            tag,
            digest,
        })
    }

    /// The name of the Docker official image this reference pulls:
    /// `busybox`, `library/busybox`, `docker.io/library/busybox`, or a
    /// mirror's `HOST/.../library/busybox` (the official images keep their
    /// `library/` path on registry mirrors). `None` for any other image.
    pub fn official(&self) -> Option<&'a str> {
        match self.registry {
            None => Some(self.path.strip_prefix("library/").unwrap_or(self.path))
                .filter(|p| !p.contains('/')),
            Some(_) => {
                let (dir, name) = self.path.rsplit_once('/')?;
                (dir == "library" || dir.ends_with("/library")).then_some(name)
            }
        }
    }
}

/// What an image runs by default, when that is a shell or an interactive
/// interpreter: `busybox:1.36`, `docker.io/library/python:3.12-slim`,
/// `node@sha256:...`. `None` for an image whose default is a server, one
/// the file does not name, and a variant tag that runs a server (`php:8.3-fpm`).
pub fn default_process(image: &str) -> Option<&'static DefaultImage> {
    let r = ImageRef::parse(image)?;
    let name = r.official()?;
    let found = all().iter().find(|i| i.name == name)?;
    let tag = r.tag.unwrap_or("");
    if found
        .server_tags
        .iter()
        .any(|w| tag.split(['-', '.', '_']).any(|t| t == w))
    {
        return None;
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_parses_and_every_image_names_its_source() {
        let raw: RawFile = serde_json::from_str(FILE.1).expect("images.yaml parses");
        assert!(raw.images.len() >= 12, "images.yaml lost entries");
        for i in all() {
            assert!(!i.cmd.is_empty(), "{}: no cmd", i.name);
            assert!(
                i.source.contains('/') && i.source.len() > 20,
                "{}: the source must name the repository and file",
                i.name
            );
            assert_eq!(
                default_process(&i.name).map(|d| d.name.as_str()),
                Some(i.name.as_str())
            );
        }
    }

    #[test]
    fn references_are_taken_apart() {
        let r = ImageRef::parse("registry.example.com:5000/team/web:1.2@sha256:abc").unwrap();
        assert_eq!(r.registry, Some("registry.example.com:5000"));
        assert_eq!(r.path, "team/web");
        assert_eq!(r.tag, Some("1.2"));
        assert_eq!(r.digest, Some("sha256:abc"));
        let r = ImageRef::parse("docker.io/library/busybox").unwrap();
        assert_eq!((r.registry, r.path, r.tag), (None, "library/busybox", None));
        let r = ImageRef::parse("localhost/busybox:1").unwrap();
        assert_eq!(r.registry, Some("localhost"));
        assert!(ImageRef::parse("").is_none());
        assert!(ImageRef::parse("not an image").is_none());
    }

    #[test]
    fn official_images_are_found_under_every_spelling() {
        for image in [
            "busybox",
            "busybox:1.36",
            "busybox@sha256:0123456789abcdef",
            "busybox:1.36.1-glibc@sha256:0123456789abcdef",
            "library/busybox:latest",
            "docker.io/library/busybox:1.36",
            "index.docker.io/library/busybox",
            "mirror.gcr.io/library/busybox:1.36",
            "public.ecr.aws/docker/library/busybox:1.36",
        ] {
            assert_eq!(
                default_process(image).map(|d| d.name.as_str()),
                Some("busybox"),
                "{image}"
            );
        }
        let py = default_process("python:3.12-slim").expect("python");
        assert_eq!(py.command_line(), "python3");
        let node = default_process("node:22-alpine").expect("node");
        assert_eq!(node.command_line(), "docker-entrypoint.sh node");
    }

    #[test]
    fn near_misses_have_no_default_shell() {
        for image in [
            "registry.example.com/busybox:1.36",
            "acme/busybox:1.36",
            "ghcr.io/acme/python-api:3.1",
            "nginx:1.27",
            "php:8.3-fpm",
            "php:8.3-apache-bookworm",
            "pythonista:1",
        ] {
            assert!(default_process(image).is_none(), "{image}");
        }
        assert!(default_process("php:8.3-cli").is_some());
    }
}
