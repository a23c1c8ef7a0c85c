//! The one rule of every record about what was seen, and when: a field is presented as current
//! only when it was read after this run's last change; a field read before it carries the time it
//! was read (`observedAt`) and `observedBeforeMutation: true`; after a change whose outcome is
//! unknown every record says `outcome: "unknown"`. Methods re-read what they record after a failed
//! or unknown-outcome step where PVE can still answer (see `Evidence::outcome` and the snapshot
//! course); what they could not re-read keeps these marks. Every record kind that carries state
//! builds its marks here.

use crate::clock::iso_time;
use crate::record_json::{opt, put};
use serde_json::{Map, Value};

/// `outcome` of a record written after a mutation whose effect is unknown.
pub const OUTCOME_UNKNOWN: &str = "unknown";

/// When a reading was taken: the host clock (ms), and how many of the run's mutations had been
/// sent by then.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Reading {
    pub at_ms: f64,
    pub after: u32,
}

impl Reading {
    /// A reading taken at `at_ms`, once `sent` mutations had been sent.
    pub fn at(at_ms: f64, sent: u32) -> Self {
        Reading { at_ms, after: sent }
    }

    /// Whether a mutation was sent after this reading.
    pub fn predates(&self, changes: Changes) -> bool {
        self.after < changes.sent
    }
}

/// What the run knows of its own changes when it writes a record.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Changes {
    /// How many mutations it has sent.
    pub sent: u32,
    /// Whether PVE may or may not have carried out one of them.
    pub outcome_unknown: bool,
}

/// The marks a record carries about its reading, put among its fields by [`Marks::put_into`]
/// (records are built as JSON: no serializer of its own, issue 32).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Marks {
    /// `unknown`: this run sent a mutation whose outcome it could not observe (a lost answer, a
    /// task whose end was not seen); the fields are the last observation, see `observedAt`.
    pub outcome: Option<String>,
    /// When the fields were read, when that is not "just now" (`recordedAt`).
    pub observed_at: Option<String>,
    /// Whether the fields were read before this run's last mutation was sent.
    pub observed_before_mutation: Option<bool>,
}

impl Marks {
    /// The marks of a record holding `reading`, given the run's `changes`: none for a reading
    /// taken after every change of a run whose outcomes are known.
    pub fn of(reading: Reading, changes: Changes) -> Marks {
        let stale = reading.predates(changes);
        let marked = stale || changes.outcome_unknown;
        Marks {
            outcome: changes.outcome_unknown.then(|| OUTCOME_UNKNOWN.to_string()),
            observed_at: marked.then(|| iso_time(reading.at_ms)),
            observed_before_mutation: marked.then_some(stale),
        }
    }

    /// The marks into a record built as JSON, absent ones left out (as flattened).
    pub fn put_into(&self, record: &mut Map<String, Value>) {
        put(record, "outcome", self.outcome.as_deref());
        put(record, "observedAt", self.observed_at.as_deref());
        let before = self.observed_before_mutation.map(Value::Bool);
        opt(record, "observedBeforeMutation", before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 1_700_000_000_000.0;

    #[test]
    fn a_reading_after_every_known_change_is_current_and_unmarked() {
        let marks = Marks::of(
            Reading::at(T, 1),
            Changes {
                sent: 1,
                outcome_unknown: false,
            },
        );
        assert_eq!(marks, Marks::default());
        let none = Marks::of(Reading::at(T, 0), Changes::default());
        assert_eq!(none, Marks::default());
    }

    #[test]
    fn a_reading_before_a_change_carries_its_time_and_the_before_mark() {
        let marks = Marks::of(
            Reading::at(T, 0),
            Changes {
                sent: 1,
                outcome_unknown: false,
            },
        );
        assert_eq!(marks.observed_before_mutation, Some(true));
        assert_eq!(
            marks.observed_at.as_deref(),
            Some("2023-11-14T22:13:20.000Z")
        );
        assert_eq!(marks.outcome, None);
    }

    #[test]
    fn a_reading_after_a_change_of_unknown_outcome_is_never_marked_as_before_it() {
        let marks = Marks::of(
            Reading::at(T, 1),
            Changes {
                sent: 1,
                outcome_unknown: true,
            },
        );
        assert_eq!(marks.outcome.as_deref(), Some("unknown"));
        assert_eq!(marks.observed_before_mutation, Some(false));
        assert!(marks.observed_at.is_some());
    }
}
