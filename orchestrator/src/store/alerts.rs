//! Change points as reported: a regression `history --alert` told someone
//! of (so a later night does not tell it again) and one a person
//! acknowledged (`history ack`: it no longer fails the gate). Which change
//! a row is, and what follows from it, is `history::alerts`' business.

use super::sql::Sql;
use super::value::Val;
use super::{now, Store, StoreError};

/// What the store keeps of a change once it was reported or acknowledged.
#[derive(Clone, Debug, PartialEq)]
pub struct AlertRow {
    pub id: String,
    pub playbook: String,
    /// The series as `SeriesKey::describe` words it.
    pub series: String,
    /// The run the change arrived with.
    pub run_id: i64,
    pub direction: String,
    pub change_pct: f64,
    /// When it was first reported, and when acknowledged, by whom, why.
    pub alerted: Option<String>,
    pub acked: Option<String>,
    pub acked_by: Option<String>,
    pub ack_note: Option<String>,
}

impl AlertRow {
    /// Which change it is, as the first six columns take it.
    fn what(&self) -> [Val; 6] {
        [
            self.id.as_str().into(),
            self.playbook.as_str().into(),
            self.series.as_str().into(),
            self.run_id.into(),
            self.direction.as_str().into(),
            self.change_pct.into(),
        ]
    }
}

const COLUMNS: &str = "id, playbook, series, run_id, direction, change_pct, alerted, acked, acked_by, ack_note";

impl Store {
    /// Every change of `playbook` that was reported or acknowledged.
    pub fn alerts(&self, playbook: &str) -> Result<Vec<AlertRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM change_alerts WHERE playbook = ?1 ORDER BY id");
        let rows = self.db().query(&sql, &[playbook.into()])?;
        Ok(rows
            .iter()
            .map(|r| AlertRow {
                id: r.text(0),
                playbook: r.text(1),
                series: r.text(2),
                run_id: r.int(3),
                direction: r.text(4),
                change_pct: r.real(5),
                alerted: r.opt_text(6),
                acked: r.opt_text(7),
                acked_by: r.opt_text(8),
                ack_note: r.opt_text(9),
            })
            .collect())
    }

    /// Stamp these changes reported now (all in one transaction: a night
    /// whose webhook took them is recorded whole or not at all); a change
    /// already reported keeps its first stamp.
    pub fn record_alerted(&self, changes: &[AlertRow]) -> Result<(), StoreError> {
        let stamp = now();
        self.db().transaction(|db| {
            for c in changes {
                db.execute(
                    "INSERT INTO change_alerts (id, playbook, series, run_id, direction, change_pct, alerted)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (id) DO UPDATE SET alerted = COALESCE(change_alerts.alerted, excluded.alerted)",
                    &[c.what().as_slice(), &[stamp.as_str().into()]].concat(),
                )?;
            }
            Ok(())
        })
    }

    /// Acknowledge a change: by `who`, now, with a note.
    pub fn record_ack(&self, c: &AlertRow, who: &str, note: Option<&str>) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT INTO change_alerts (id, playbook, series, run_id, direction, change_pct, acked, acked_by, ack_note)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (id) DO UPDATE SET acked = excluded.acked, acked_by = excluded.acked_by,
                 ack_note = excluded.ack_note",
            &[c.what().as_slice(), &[now().into(), who.into(), note.into()]].concat(),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{new_run, places};
    use super::*;

    #[test]
    fn a_change_keeps_its_first_report_and_takes_its_acknowledgement_on_both_databases() {
        for at in &places().urls {
            let s = Store::open(at).unwrap();
            let run = new_run(&s, None);
            let row = |id: &str| AlertRow {
                id: id.into(),
                playbook: "p.yml".into(),
                series: "h · p · - · m speed".into(),
                run_id: run,
                direction: "regression".into(),
                change_pct: -10.5,
                alerted: None,
                acked: None,
                acked_by: None,
                ack_note: None,
            };
            s.record_alerted(&[row("aaaaaaaaaa")]).unwrap();
            let first = s.alerts("p.yml").unwrap()[0].alerted.clone().expect("stamped");
            std::thread::sleep(std::time::Duration::from_millis(2));
            s.record_alerted(&[row("aaaaaaaaaa"), row("bbbbbbbbbb")]).unwrap();
            s.record_ack(&row("bbbbbbbbbb"), "ann@lab", Some("new firmware")).unwrap();
            s.record_ack(&row("cccccccccc"), "bob@lab", None).unwrap();
            let got = s.alerts("p.yml").unwrap();
            assert_eq!(got.len(), 3, "{at}");
            assert_eq!(got[0].alerted.as_ref(), Some(&first), "{at}: reported once, stamped once");
            assert_eq!((got[0].change_pct, got[0].run_id), (-10.5, run));
            assert!(got[0].acked.is_none());
            assert!(got[1].alerted.is_some() && got[1].acked.is_some(), "{at}");
            assert_eq!(
                (got[1].acked_by.as_deref(), got[1].ack_note.as_deref()),
                (Some("ann@lab"), Some("new firmware"))
            );
            assert!(got[2].alerted.is_none() && got[2].acked_by.as_deref() == Some("bob@lab"), "{at}");
            assert!(s.alerts("other.yml").unwrap().is_empty());
        }
    }
}
