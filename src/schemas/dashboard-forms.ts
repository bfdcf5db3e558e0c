import { Type, type Static } from '@sinclair/typebox';
import { API_KEY_STATUSES } from '../accounts/api-keys.ts';

/**
 * The dashboard's form bodies (urlencoded, `_csrf` besides). A field left out counts as empty, so a
 * half-filled form reaches the domain's own checks and comes back on its page with their message;
 * which events, plans or readings are valid stays the domain's rule, the schemas give the shapes.
 */
const text = () => Type.String({ default: '' });

export const LoginForm = Type.Object({ email: text(), password: text() });

export const SignupForm = Type.Object({ organisation: text(), email: text(), password: text() });

export const ApiKeyForm = Type.Object({
  project_name: text(),
  status: Type.Union(
    API_KEY_STATUSES.map((status) => Type.Literal(status)),
    { default: 'active' },
  ),
});

/** A repeated field is a list; one ticked event arrives as a single value and is taken as a list of one. */
export const WebhookEndpointForm = Type.Object({ url: text(), events: Type.Array(Type.String(), { default: [] }) });
export type WebhookEndpointForm = Static<typeof WebhookEndpointForm>;

export const TestEventForm = Type.Object({ kind: Type.Optional(Type.String()) });
export type TestEventForm = Static<typeof TestEventForm>;

export const ReadingCorrectionForm = Type.Object({ reading: Type.Optional(Type.String()) });
export type ReadingCorrectionForm = Static<typeof ReadingCorrectionForm>;

/** A meter's counter layout (the meter page): the wheel counts as typed, checked by the domain's rule. */
export const MeterLayoutForm = Type.Object({ whole_wheels: text(), fractional_wheels: text() });
export type MeterLayoutForm = Static<typeof MeterLayoutForm>;

/** The review queue's forms carry the pass's cursor on, so that the next item comes after it. */
export const ReviewConfirmationForm = Type.Object({ after: Type.Optional(Type.String()) });
export type ReviewConfirmationForm = Static<typeof ReviewConfirmationForm>;

export const ReviewCorrectionForm = Type.Composite([ReadingCorrectionForm, ReviewConfirmationForm]);
export type ReviewCorrectionForm = Static<typeof ReviewCorrectionForm>;

/**
 * A one-time link (verify an email, an invitation, a password reset): one missing its token reaches the domain's check,
 * which says the link is not valid.
 */
export const LinkQuery = Type.Object({ token: text() });

export const EmailForm = Type.Object({ email: text() });

/** The form a one-time link opens to choose a password, which carries the link's token on. */
export const NewPasswordForm = Type.Object({ token: text(), password: text(), password_confirmation: text() });
