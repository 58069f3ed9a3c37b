ALTER TABLE jobs DROP COLUMN admitted_before;
