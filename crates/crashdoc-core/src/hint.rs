//! One way to give hints (uv's): an error says what went wrong, and its
//! [`Hint`] says what the user can do about it. The CLI walks the error
//! chain once and prints `error:`, every `Caused by:` and every `hint:`;
//! the MCP server puts the same hints in its tool errors. Advice never goes
//! into an error's message.

use std::borrow::Cow;
use std::error::Error;

/// What the user can do about an error, if anything is known.
pub trait Hint {
    fn hint(&self) -> Option<Cow<'_, str>>;
}

/// Finds the hint of one kind of error in an error chain's link.
pub type Finder = for<'a> fn(&'a (dyn Error + 'static)) -> Option<Cow<'a, str>>;

/// The [`Finder`] for errors of type `T`: `finder::<InputError>`.
pub fn finder<'a, T: Hint + Error + 'static>(e: &'a (dyn Error + 'static)) -> Option<Cow<'a, str>> {
    e.downcast_ref::<T>()?.hint()
}

/// Every hint of an error chain, outermost first, each text once.
pub fn hints<'a>(
    chain: impl IntoIterator<Item = &'a (dyn Error + 'static)>,
    finders: &[Finder],
) -> Vec<Cow<'a, str>> {
    let mut out: Vec<Cow<'a, str>> = Vec::new();
    for link in chain {
        for f in finders {
            if let Some(h) = f(link)
                && !out.contains(&h)
            {
                out.push(h);
            }
        }
    }
    out
}

impl Hint for crate::causes::UnknownCause {
    fn hint(&self) -> Option<Cow<'_, str>> {
        let ids: Vec<&str> = crate::Cause::ALL.iter().map(|c| c.id()).collect();
        Some(Cow::Owned(format!(
            "a cause id is one of: {}",
            ids.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::InputError;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] InputError);

    #[derive(Debug, thiserror::Error)]
    #[error("plain")]
    struct Plain;

    fn chain<'a>(e: &'a (dyn Error + 'static)) -> Vec<&'a (dyn Error + 'static)> {
        let mut v = vec![e];
        let mut cur = e;
        while let Some(s) = cur.source() {
            v.push(s);
            cur = s;
        }
        v
    }

    #[test]
    fn a_hinted_error_anywhere_in_the_chain_gives_its_hint() {
        let e = Outer(InputError::Empty);
        let one: &[Finder] = &[finder::<InputError>];
        let h = hints(chain(&e), one);
        assert_eq!(h.len(), 1);
        assert!(h[0].contains("pipe kubectl output"), "{h:?}");
    }

    #[test]
    fn an_error_of_an_unlisted_type_gives_none() {
        let one: &[Finder] = &[finder::<InputError>];
        assert!(hints(chain(&Plain), one).is_empty());
        // Listed finders only: InputError is in the chain but not asked for.
        let e = Outer(InputError::Empty);
        let unknown: &[Finder] = &[finder::<crate::causes::UnknownCause>];
        assert!(hints(chain(&e), unknown).is_empty());
    }

    #[test]
    fn the_same_hint_twice_is_printed_once() {
        let e = Outer(InputError::Empty);
        let twice: &[Finder] = &[finder::<InputError>, finder::<InputError>];
        let h = hints(chain(&e), twice);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn an_unknown_cause_lists_the_ids() {
        let e: crate::causes::UnknownCause = "nope".parse::<crate::Cause>().unwrap_err();
        let h = e.hint().unwrap_or_default();
        assert!(h.contains("oom-killed"), "{h}");
    }
}
