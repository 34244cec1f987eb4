-- The quorum counts listed principals: one approval satisfies one principal, and no principal is satisfied
-- twice (two approvers racing for the same one: the second insert fails and that approver decides again).
CREATE UNIQUE INDEX decisions_principal_approval ON decisions (approval_id, principal) WHERE decision = 'approve';
