import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { AnomalyJson, AnomalyKind } from '../meters/anomalies.ts';
import type { Plausibility } from '../readers/reader.ts';
import type { DeliveryEvent, WebhookEvent } from '../webhooks/events.ts';

/** Where a plausibility window's reference came from (see src/pipeline/expect-reading.ts). */
export type ReferenceSource = 'previous_reading' | 'reading' | 'correction' | 'manual';

/** Kysely's view of the tables in sql/. The SQL files are the source of truth. */
export interface Database {
  plans: PlansTable;
  accounts: AccountsTable;
  subscriptions: SubscriptionsTable;
  api_keys: ApiKeysTable;
  submissions: SubmissionsTable;
  meter_points: MeterPointsTable;
  meter_anomalies: MeterAnomaliesTable;
  reading_corrections: ReadingCorrectionsTable;
  submission_photos: SubmissionPhotosTable;
  readings: ReadingsTable;
  api_usage: ApiUsageTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_manual_sends: WebhookManualSendsTable;
  users: UsersTable;
  sessions: SessionsTable;
  login_attempts: LoginAttemptsTable;
  signup_attempts: SignupAttemptsTable;
  email_verifications: EmailVerificationsTable;
  invitations: InvitationsTable;
  password_resets: PasswordResetsTable;
  password_reset_requests: PasswordResetRequestsTable;
  idempotency_keys: IdempotencyKeysTable;
}

type CreatedAt = ColumnType<Date, Date | undefined, never>;
/** bigint identity columns: pg returns them as strings. */
type Id = ColumnType<string, never, never>;
type IdRef = ColumnType<string, string | number, string | number>;

export interface PlansTable {
  code: string;
  name: string;
  monthly_request_limit: number;
  created_at: CreatedAt;
}

export interface AccountsTable {
  id: Id;
  name: string;
  /** numeric: pg returns it as a string. */
  max_flow_m3_per_hour: ColumnType<string, number | string | undefined, number | string>;
  /** A reading less confident than this needs a person's look (needs_review), unless its whole units are agreed. */
  review_below: ColumnType<number, number | undefined, number>;
  /** A meter's usual consumption, m³ a day, while its own history is too short (numeric: a string). */
  usual_m3_per_day: ColumnType<string, number | string | undefined, number | string>;
  /** `meterlens train` also learns from hosted readers' confident, plausible readings of this account. */
  train_on_hosted: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: CreatedAt;
  /** The plan a self-signed-up account starts on once its user's email is verified. */
  trial_plan_code: ColumnType<string | null, string | undefined, string | null>;
}

export type SubscriptionStatus = 'active' | 'cancelled';

export interface SubscriptionsTable {
  account_id: IdRef;
  plan_code: string;
  status: SubscriptionStatus;
  period_start: Date;
  period_end: Date;
  updated_at: Generated<Date>;
  /** The period_end whose passing was announced as `subscription.expired`. */
  expiry_announced_for: ColumnType<Date | null, never, Date>;
}

export type ApiKeyStatus = 'active' | 'inactive';

export interface ApiKeysTable {
  id: Id;
  account_id: IdRef;
  project_name: string;
  status: Generated<ApiKeyStatus>;
  key_sha256: string;
  display_prefix: string;
  display_suffix: string;
  created_at: CreatedAt;
  last_used_at: Date | null;
  deleted_at: Date | null;
}
export type ApiKey = Selectable<ApiKeysTable>;

/** manual: a reading a person took, without a photo (POST /api/meters/{meter_id}/readings). */
export type SubmissionMode = 'async' | 'sync' | 'manual';
export type SubmissionStatus = 'pending' | 'processing' | 'completed' | 'failed';

export interface SubmissionsTable {
  id: Id;
  reference_id: Generated<string>;
  account_id: IdRef;
  api_key_id: IdRef;
  mode: SubmissionMode;
  status: Generated<SubmissionStatus>;
  error_code: string | null;
  error_message: string | null;
  created_at: CreatedAt;
  started_at: Date | null;
  finished_at: Date | null;
  meter_point_id: ColumnType<string | null, string | number | null | undefined, never>;
  previous_reading: ColumnType<string | null, string | null | undefined, never>;
  previous_read_at: ColumnType<Date | null, Date | null | undefined, never>;
  /** When the retention job deleted the photo; the meter and its reading stay. */
  image_removed_at: ColumnType<Date | null, never, Date>;
  /** needs_review as refreshNeedsReview (src/meters/review.ts) last stored it: what the review queue's index holds. */
  needs_review: ColumnType<boolean, never, boolean>;
}

/** A physical meter, named by the client's `meter_id` (its external_id). */
export interface MeterPointsTable {
  id: Id;
  account_id: IdRef;
  external_id: string;
  max_flow_m3_per_hour: ColumnType<string | null, number | string | null | undefined, number | string | null>;
  /** The counter layout a person set (both or neither). */
  whole_wheels: ColumnType<number | null, number | null | undefined, number | null>;
  fractional_wheels: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: CreatedAt;
}

/** An episode of a meter that needs a visit (src/meters/anomalies.ts). */
export interface MeterAnomaliesTable {
  id: Id;
  meter_point_id: IdRef;
  kind: AnomalyKind;
  opened_at: CreatedAt;
  /** Null while the episode is open. */
  closed_at: ColumnType<Date | null, never, Date>;
  /** The submission that opened the episode. */
  submission_id: ColumnType<string | null, string | number, never>;
  /** meter.anomaly's data as sent, less meter_id. */
  data: ColumnType<AnomalyJson, string, never>;
}

export interface ReadingCorrectionsTable {
  id: Id;
  submission_id: IdRef;
  reading: string;
  value: ColumnType<string, number | string, never>;
  api_key_id: ColumnType<string | null, string | number | null, never>;
  user_id: ColumnType<string | null, string | number | null, never>;
  /** Who, as shown then: the key's project and prefix, or the user's email. */
  corrected_by: string;
  created_at: CreatedAt;
}

export interface SubmissionPhotosTable {
  submission_id: IdRef;
  original_format: string;
  original_bytes: number;
  /** The file as uploaded, until the read step has normalised it (then null); or in upload_object. */
  upload: Buffer | null;
  /** Where the upload lives (`s3://bucket/key`) when PHOTO_STORE put it in a bucket. */
  upload_object: ColumnType<string | null, string | null | undefined, string | null>;
  /** The upright normalised JPEG and its size; null until the read step has made it. */
  width: number | null;
  height: number | null;
  jpeg: Buffer | null;
  /** Where the upright JPEG lives (`s3://bucket/key`) when PHOTO_STORE put it in a bucket. */
  jpeg_object: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ReadingsTable {
  id: Id;
  submission_id: IdRef;
  reading: string;
  /** numeric: pg returns it as a string to keep every digit. */
  value: ColumnType<string, number | string, never>;
  confidence: number;
  reader: string;
  model: string;
  escalated: boolean;
  digit_confidences: number[] | null;
  counter_box: ColumnType<Array<[number, number]> | null, string | null, never>;
  attempts: ColumnType<unknown, string, never>;
  read_ms: number;
  raw_answer: ColumnType<unknown, string | null, never>;
  plausibility: ColumnType<Plausibility, Plausibility | undefined, never>;
  reference_reading: ColumnType<string | null, string | null | undefined, never>;
  reference_source: ColumnType<ReferenceSource | null, ReferenceSource | null | undefined, never>;
  reference_read_at: ColumnType<Date | null, Date | null | undefined, never>;
  window_min: ColumnType<string | null, number | null | undefined, never>;
  window_max: ColumnType<string | null, number | null | undefined, never>;
  unconstrained_reading: ColumnType<string | null, string | null | undefined, never>;
  plausibility_reason: ColumnType<string | null, string | null | undefined, never>;
  /** The submission whose value was the reference; null: the client's previous_reading. */
  reference_submission_id: ColumnType<string | null, string | null | undefined, never>;
  usual_max: ColumnType<string | null, number | null | undefined, never>;
  whole_units_agreed: ColumnType<boolean, boolean | undefined, never>;
  created_at: CreatedAt;
}
export type NewReading = Insertable<ReadingsTable>;

export interface ApiUsageTable {
  account_id: IdRef;
  /** 'YYYY-MM-01' (src/db/database.ts keeps dates as strings). */
  month: ColumnType<string, string, never>;
  request_count: number;
  threshold_reached_at: ColumnType<Date | null, never, Date>;
  limit_reached_at: ColumnType<Date | null, never, Date>;
}

export interface WebhookEndpointsTable {
  id: Id;
  account_id: IdRef;
  url: string;
  secret: string;
  events: ColumnType<WebhookEvent[], WebhookEvent[] | undefined, WebhookEvent[]>;
  enabled: Generated<boolean>;
  disabled_reason: string | null;
  created_at: CreatedAt;
  /** The first failed attempt of the current run of failures; null once an attempt succeeds. */
  failing_since: ColumnType<Date | null, never, Date | null>;
  consecutive_failures: Generated<number>;
}
export type WebhookEndpoint = Selectable<WebhookEndpointsTable>;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookDeliveriesTable {
  id: Id;
  event_id: string;
  /** Null once the endpoint is deleted: the delivery stays in the account's history until retention. */
  endpoint_id: IdRef | null;
  account_id: IdRef;
  /** The deleted endpoint's URL. */
  deleted_endpoint_url: string | null;
  submission_id: IdRef | null;
  event_type: DeliveryEvent;
  /** json column: the exact text that is signed and sent. */
  payload: ColumnType<unknown, string, never>;
  status: Generated<DeliveryStatus>;
  attempt_count: Generated<number>;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: CreatedAt;
}
export type WebhookDelivery = Selectable<WebhookDeliveriesTable>;

export interface WebhookAttemptsTable {
  id: Id;
  delivery_id: IdRef;
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  /** The first RESPONSE_BODY_START_CHARACTERS characters of the answer; null when none came. */
  response_body_start: string | null;
}

export interface WebhookManualSendsTable {
  id: Id;
  account_id: IdRef;
  endpoint_id: IdRef | null;
  sent_at: CreatedAt;
}

export interface UsersTable {
  id: Id;
  account_id: IdRef;
  email: string;
  password_hash: string;
  created_at: CreatedAt;
  last_login_at: Date | null;
  email_verified_at: ColumnType<Date | null, never, Date>;
  role: UserRole;
}

/** An owner invites and removes the account's people; a member may not (src/accounts/team.ts). */
export type UserRole = 'owner' | 'member';

export interface SessionsTable {
  id: Id;
  token_sha256: string;
  user_id: IdRef;
  csrf_token: string;
  created_at: CreatedAt;
  expires_at: Date;
  last_seen_at: Generated<Date>;
}

export interface LoginAttemptsTable {
  id: Id;
  email: string;
  ip: string;
  attempted_at: CreatedAt;
}

export interface SignupAttemptsTable {
  id: Id;
  ip: string;
  attempted_at: CreatedAt;
}

export interface EmailVerificationsTable {
  id: Id;
  user_id: IdRef;
  token_sha256: string;
  created_at: CreatedAt;
  expires_at: Date;
  used_at: ColumnType<Date | null, never, Date>;
}

export interface InvitationsTable {
  id: Id;
  account_id: IdRef;
  email: string;
  invited_by: IdRef | null;
  token_sha256: string;
  created_at: CreatedAt;
  expires_at: Date;
  /** Accepted, or withdrawn by an owner. */
  used_at: ColumnType<Date | null, never, Date>;
}

export interface PasswordResetsTable {
  id: Id;
  user_id: IdRef;
  token_sha256: string;
  created_at: CreatedAt;
  expires_at: Date;
  used_at: ColumnType<Date | null, never, Date>;
}

export interface PasswordResetRequestsTable {
  id: Id;
  email: string;
  ip: string;
  attempted_at: CreatedAt;
}

export interface IdempotencyKeysTable {
  account_id: IdRef;
  idempotency_key: string;
  request_sha256: string;
  /** Per text field; null on keys claimed before migration 016. */
  fields_sha256: ColumnType<Record<string, string | null> | null, string | null, string | null>;
  status_code: number | null;
  response_headers: ColumnType<Record<string, string> | null, string | null, string | null>;
  response_body: string | null;
  created_at: CreatedAt;
}
