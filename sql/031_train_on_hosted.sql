-- The fleet loop (issue 49): `meterlens train` learns from the photos people confirmed or corrected,
-- and, where the account allows it here, also from readings a hosted reader made that are as sure as
-- the account's review threshold asks and plausible (see exportDataset in src/meters/dataset-export.ts).
ALTER TABLE accounts ADD COLUMN train_on_hosted boolean NOT NULL DEFAULT false;
