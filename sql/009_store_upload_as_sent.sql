-- The ack stores the upload as sent; the read step turns it into the upright normalised JPEG
-- (then stored in jpeg, width, height) and drops the upload. A meter image holds one or the other
-- or, for a moment inside that step's transaction, both.
ALTER TABLE meter_images ADD COLUMN upload bytea;
ALTER TABLE meter_images
  ALTER COLUMN jpeg DROP NOT NULL,
  ALTER COLUMN width DROP NOT NULL,
  ALTER COLUMN height DROP NOT NULL,
  ADD CONSTRAINT meter_images_upload_or_jpeg CHECK (upload IS NOT NULL OR (jpeg IS NOT NULL AND width IS NOT NULL AND height IS NOT NULL));
COMMENT ON COLUMN meter_images.upload IS 'The file as uploaded, until the read step has normalised it';
COMMENT ON COLUMN meter_images.jpeg IS 'The upright normalised JPEG the readers read and the dashboard shows';
COMMENT ON COLUMN meter_images.width IS 'Width of jpeg';
