//! An approval's `context` (what the registrant says asked for it) as readable text: the mail's
//! "Requested by" line and the app's "requested by" / source line.

use serde_json::{Map, Value};

/// The known members of a registration's free-form `context`. Empty strings count as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalContext {
    pub requested_by: Option<String>,
    pub execution_arn: Option<String>,
    pub state_machine_arn: Option<String>,
    pub execution_name: Option<String>,
    /// The state that asked (`stateName`).
    pub step: Option<String>,
}

/// `arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME` → (MACHINE, NAME). A name may contain `:`.
fn split_execution_arn(arn: &str) -> Option<(&str, String)> {
    let parts: Vec<&str> = arn.split(':').collect();
    (parts.len() >= 8 && parts[5] == "execution").then(|| (parts[6], parts[7..].join(":")))
}

impl ApprovalContext {
    pub fn from_map(context: &Map<String, Value>) -> Self {
        let s = |k: &str| context.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
        Self {
            requested_by: s("requestedBy"),
            execution_arn: s("executionArn"),
            state_machine_arn: s("stateMachineArn"),
            execution_name: s("executionName"),
            step: s("stateName"),
        }
    }

    /// The state machine's name, read from the execution ARN.
    pub fn machine(&self) -> Option<String> {
        self.execution_arn.as_deref().and_then(split_execution_arn).map(|(m, _)| m.to_owned())
    }

    /// The execution's name (from its ARN), else the raw ARN, else `executionName`.
    pub fn execution(&self) -> Option<String> {
        let arn = self.execution_arn.as_deref();
        arn.and_then(split_execution_arn)
            .map(|(_, name)| name)
            .or_else(|| arn.map(str::to_owned))
            .or_else(|| self.execution_name.clone())
    }

    /// Where the request came from in one line: `machine › step`, either alone, else the execution.
    pub fn source(&self) -> Option<String> {
        match (self.machine(), self.step.clone()) {
            (Some(m), Some(s)) => Some(format!("{m} › {s}")),
            (Some(m), None) => Some(m),
            (None, Some(s)) => Some(s),
            (None, None) => self.execution(),
        }
    }

    /// The mail's "Requested by": the registrant's own words, else the most specific workflow reference.
    pub fn requested_by_line(&self) -> Option<&str> {
        [&self.requested_by, &self.execution_arn, &self.state_machine_arn, &self.execution_name, &self.step]
            .into_iter()
            .find_map(|v| v.as_deref())
    }

    /// "Requested by" as mail and chat show it: [`Self::requested_by_line`], else `requesters` (the principals
    /// registered for separation of duty, joined by [`crate::base::principal::joined`]) when there are any.
    pub fn requested_by_or<'a>(&'a self, requesters: &'a str) -> Option<&'a str> {
        self.requested_by_line().or((!requesters.is_empty()).then_some(requesters))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(v: Value) -> ApprovalContext {
        ApprovalContext::from_map(v.as_object().unwrap())
    }

    #[test]
    fn execution_arn_reads_as_machine_and_execution() {
        let c = ctx(json!({"executionArn": "arn:aws:states:us-east-1:123:execution:deploy:run:42",
                           "stateName": "Approve"}));
        assert_eq!(c.machine().as_deref(), Some("deploy"));
        assert_eq!(c.execution().as_deref(), Some("run:42"));
        assert_eq!(c.source().as_deref(), Some("deploy › Approve"));
        assert_eq!(c.requested_by_line(), Some("arn:aws:states:us-east-1:123:execution:deploy:run:42"));
    }

    #[test]
    fn requested_by_wins_and_empty_strings_are_absent() {
        let c = ctx(json!({"requestedBy": "", "stateMachineArn": "arn:sm", "executionName": "n", "x": 1}));
        assert_eq!(c.requested_by, None);
        assert_eq!(c.requested_by_line(), Some("arn:sm"));
        assert_eq!(c.source().as_deref(), Some("n"));
        let c = ctx(json!({"requestedBy": "ops bot", "executionArn": "not-an-arn"}));
        assert_eq!(c.requested_by_line(), Some("ops bot"));
        assert_eq!((c.machine(), c.execution().as_deref()), (None, Some("not-an-arn")));
        assert_eq!(c.source().as_deref(), Some("not-an-arn"), "an ARN that does not parse is shown as it is");
        assert_eq!(ctx(json!({})).requested_by_line(), None);
        assert_eq!(ctx(json!({})).requested_by_or(""), None);
        assert_eq!(ctx(json!({})).requested_by_or("a@x.example"), Some("a@x.example"));
        assert_eq!(ctx(json!({"requestedBy": "ops bot"})).requested_by_or("a@x.example"), Some("ops bot"));
        assert_eq!(ctx(json!({})).source(), None);
        assert_eq!(ctx(json!({"stateName": "Approve"})).source().as_deref(), Some("Approve"));
    }
}
