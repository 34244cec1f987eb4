-- Where the callback goes: the AWS account and region the workflow runs in (AWS_TARGETS). NULL: this ringi's
-- one account in AWS_REGION (an approval registered without targets configured).
ALTER TABLE approvals ADD COLUMN aws_account TEXT;
ALTER TABLE approvals ADD COLUMN aws_region TEXT;
