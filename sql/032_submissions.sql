-- One noun per thing. A submission is one photo sent (or one reading a person entered) and what became of it;
-- its table was called `meters`, which is what a meter point is. Joining readings to the wrong table ran without
-- error; with these names an old query against `meters` fails loudly instead of answering wrongly.
ALTER TABLE meters RENAME TO submissions;
ALTER TABLE meter_images RENAME TO submission_photos;

ALTER TABLE submission_photos RENAME COLUMN meter_id TO submission_id;
ALTER TABLE readings RENAME COLUMN meter_id TO submission_id;
ALTER TABLE readings RENAME COLUMN reference_meter_id TO reference_submission_id;
ALTER TABLE reading_corrections RENAME COLUMN meter_id TO submission_id;
ALTER TABLE meter_anomalies RENAME COLUMN meter_id TO submission_id;
ALTER TABLE webhook_deliveries RENAME COLUMN meter_id TO submission_id;

ALTER TABLE submissions RENAME CONSTRAINT meters_pkey TO submissions_pkey;
ALTER TABLE submissions RENAME CONSTRAINT meters_reference_id_key TO submissions_reference_id_key;
ALTER TABLE submissions RENAME CONSTRAINT meters_status_check TO submissions_status_check;
ALTER TABLE submissions RENAME CONSTRAINT meters_mode_check TO submissions_mode_check;
ALTER TABLE submissions RENAME CONSTRAINT meters_check TO submissions_failed_has_error_check;
ALTER TABLE submissions RENAME CONSTRAINT meters_previous_reading_check TO submissions_previous_reading_check;
ALTER TABLE submissions RENAME CONSTRAINT meters_account_id_fkey TO submissions_account_id_fkey;
ALTER TABLE submissions RENAME CONSTRAINT meters_api_key_id_fkey TO submissions_api_key_id_fkey;
ALTER TABLE submissions RENAME CONSTRAINT meters_meter_point_id_fkey TO submissions_meter_point_id_fkey;
ALTER TABLE submission_photos RENAME CONSTRAINT meter_images_pkey TO submission_photos_pkey;
ALTER TABLE submission_photos RENAME CONSTRAINT meter_images_meter_id_fkey TO submission_photos_submission_id_fkey;
ALTER TABLE submission_photos RENAME CONSTRAINT meter_images_upload_or_jpeg TO submission_photos_upload_or_jpeg;
ALTER TABLE submission_photos RENAME CONSTRAINT meter_images_upload_in_one_place TO submission_photos_upload_in_one_place;
ALTER TABLE submission_photos RENAME CONSTRAINT meter_images_jpeg_in_one_place TO submission_photos_jpeg_in_one_place;
ALTER TABLE readings RENAME CONSTRAINT readings_meter_id_key TO readings_submission_id_key;
ALTER TABLE readings RENAME CONSTRAINT readings_meter_id_fkey TO readings_submission_id_fkey;
ALTER TABLE readings RENAME CONSTRAINT readings_reference_meter_id_fkey TO readings_reference_submission_id_fkey;
ALTER TABLE reading_corrections RENAME CONSTRAINT reading_corrections_meter_id_fkey TO reading_corrections_submission_id_fkey;
ALTER TABLE meter_anomalies RENAME CONSTRAINT meter_anomalies_meter_id_fkey TO meter_anomalies_submission_id_fkey;
ALTER TABLE webhook_deliveries RENAME CONSTRAINT webhook_deliveries_meter_id_fkey TO webhook_deliveries_submission_id_fkey;

ALTER INDEX meters_account_created RENAME TO submissions_account_created;
ALTER INDEX meters_account_status_created RENAME TO submissions_account_status_created;
ALTER INDEX meters_unfinished RENAME TO submissions_unfinished;
ALTER INDEX meters_meter_point RENAME TO submissions_meter_point;
ALTER INDEX meters_meter_point_review RENAME TO submissions_meter_point_review;
ALTER INDEX meters_review_queue RENAME TO submissions_review_queue;
ALTER INDEX meter_images_upload_object RENAME TO submission_photos_upload_object;
ALTER INDEX meter_images_jpeg_object RENAME TO submission_photos_jpeg_object;
ALTER INDEX reading_corrections_meter RENAME TO reading_corrections_submission;
