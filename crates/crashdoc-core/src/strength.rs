//! How strongly a piece of evidence supports a cause: a handful of named
//! levels, declared in the catalog and by the rules, and the one place
//! where a level becomes a number.
//!
//! The number exists only because support from several sources adds up
//! (a log line, an event and a status field agreeing say more than one of
//! them) and because `confidence` is read off it. Which cause wins when two
//! compete is not decided here: each rule declares the causes it outranks
//! (`rules::Outrank`), and `diagnose` applies those declarations.

use serde::{Deserialize, Serialize};

/// How strongly one piece of evidence supports a cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strength {
    /// What the status alone suggests (an exit code, a restart pattern),
    /// with no message naming the cause: a candidate to rule out, never a
    /// diagnosis on its own. Only `rules::candidates` uses it.
    Hint,
    /// A hint: counted only when nothing stronger is found.
    Weak,
    /// Usually the cause when it is the last error before exit.
    Moderate,
    /// Names the cause, but can also be a consequence of another failure.
    Strong,
    /// Names the cause; practically nothing else prints it.
    Decisive,
    /// A status field records the cause itself (an `OOMKilled` reason, an
    /// eviction, a pull error on the image the container waits for). Only
    /// the rules' checks use it, never a message of the catalog.
    Certain,
}

impl Strength {
    pub const ALL: [Strength; 6] = [
        Strength::Hint,
        Strength::Weak,
        Strength::Moderate,
        Strength::Strong,
        Strength::Decisive,
        Strength::Certain,
    ];

    /// The support score of one piece of evidence at this level, 0..1.
    pub fn score(self) -> f32 {
        match self {
            Strength::Hint => 0.4,
            Strength::Weak => 0.55,
            Strength::Moderate => 0.7,
            Strength::Strong => 0.8,
            Strength::Decisive => 0.9,
            Strength::Certain => 0.95,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            Strength::Hint => "hint",
            Strength::Weak => "weak",
            Strength::Moderate => "moderate",
            Strength::Strong => "strong",
            Strength::Decisive => "decisive",
            Strength::Certain => "certain",
        }
    }
}

impl std::fmt::Display for Strength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Small adjustments of a finding's score, named so that check bodies say
/// what they weigh instead of carrying numbers.
pub mod adjust {
    /// Independent support from another source (a log line and an event).
    pub const CORROBORATED: f32 = 0.02;
    /// Each further distinct line saying the same thing (up to three).
    pub const REPEATED: f32 = 0.03;
    /// The line is where the program says why it stopped (the last line of a
    /// traceback, a panic, a fatal log line).
    pub const DECISIVE_LINE: f32 = 0.08;
    /// The line is near the end of the log.
    pub const NEAR_END: f32 = 0.04;
    /// No score reaches certainty.
    pub const CEILING: f32 = 0.97;
    /// A finding that names more than the generic line it rests on (the
    /// volume mount a write failed under) ranks just above that line.
    pub const MORE_SPECIFIC: f32 = 0.02;
    /// The ceiling of such a finding, and of merged findings.
    pub const SPECIFIC_CEILING: f32 = 0.98;
    /// How much a match counts by where it was read (the crashed run's own
    /// output counts fully): the current run, an event or status field (it
    /// may be about a sibling pod), free text, the text of a structured input.
    pub const AT_CURRENT_RUN: f32 = 0.97;
    pub const AT_FIELD: f32 = 0.97;
    pub const AT_FREE_TEXT: f32 = 0.9;
    pub const AT_STRUCTURED_TEXT: f32 = 0.88;
    /// A weaker entry on a line that a stronger one explains.
    pub const OUTSHONE_ON_ITS_LINE: f32 = 0.6;
    /// Each further candidate of the status alone ranks this much lower.
    pub const NEXT_CANDIDATE: f32 = 0.01;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered() {
        let mut last = 0.0;
        for l in Strength::ALL {
            assert!(l.score() > last);
            last = l.score();
        }
    }
}
