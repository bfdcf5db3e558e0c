-- PHOTO_STORE=s3://bucket/prefix: a photo's bytes live in an S3-compatible bucket and its row
-- holds where (`s3://bucket/key`); with the default store, in the row as before. Each photo (the
-- upload as sent, the upright JPEG) is in one place: its bytes or its object, never both.
ALTER TABLE meter_images
  ADD COLUMN upload_object text,
  ADD COLUMN jpeg_object text,
  DROP CONSTRAINT meter_images_upload_or_jpeg,
  ADD CONSTRAINT meter_images_upload_or_jpeg CHECK (
    upload IS NOT NULL OR upload_object IS NOT NULL
    OR ((jpeg IS NOT NULL OR jpeg_object IS NOT NULL) AND width IS NOT NULL AND height IS NOT NULL)),
  ADD CONSTRAINT meter_images_upload_in_one_place CHECK (upload IS NULL OR upload_object IS NULL),
  ADD CONSTRAINT meter_images_jpeg_in_one_place CHECK (jpeg IS NULL OR jpeg_object IS NULL);
COMMENT ON COLUMN meter_images.upload_object IS 'Where the upload lives (s3://bucket/key) when it is not in upload';
COMMENT ON COLUMN meter_images.jpeg_object IS 'Where the upright JPEG lives (s3://bucket/key) when it is not in jpeg';

-- The orphan sweep asks, for each object it lists, whether a row points at it.
CREATE UNIQUE INDEX meter_images_upload_object ON meter_images (upload_object) WHERE upload_object IS NOT NULL;
CREATE UNIQUE INDEX meter_images_jpeg_object ON meter_images (jpeg_object) WHERE jpeg_object IS NOT NULL;
