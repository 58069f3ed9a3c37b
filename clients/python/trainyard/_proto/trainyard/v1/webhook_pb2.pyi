from trainyard._proto.google.api import annotations_pb2 as _annotations_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from trainyard._proto.protoc_gen_openapiv2.options import annotations_pb2 as _annotations_pb2_1
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DELIVERY_STATE_FAILED: DeliveryState
DELIVERY_STATE_PENDING: DeliveryState
DELIVERY_STATE_SUCCEEDED: DeliveryState
DELIVERY_STATE_UNSPECIFIED: DeliveryState
DESCRIPTOR: _descriptor.FileDescriptor
WEBHOOK_EVENT_TYPE_JOB_ADMITTED: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_CANCELLED: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_CREATED: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_FAILED: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_IDLE_GPUS: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_PREEMPTED: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_REPLICA_RESTARTED: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_RUNNING: WebhookEventType
WEBHOOK_EVENT_TYPE_JOB_SUCCEEDED: WebhookEventType
WEBHOOK_EVENT_TYPE_TENANT_QUOTA_CHANGED: WebhookEventType
WEBHOOK_EVENT_TYPE_UNSPECIFIED: WebhookEventType
WEBHOOK_STATE_ACTIVE: WebhookState
WEBHOOK_STATE_DISABLED: WebhookState
WEBHOOK_STATE_UNSPECIFIED: WebhookState

class CreateWebhookRequest(_message.Message):
    __slots__ = ["parent", "webhook", "webhook_id"]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_ID_FIELD_NUMBER: _ClassVar[int]
    parent: str
    webhook: Webhook
    webhook_id: str
    def __init__(self, parent: _Optional[str] = ..., webhook_id: _Optional[str] = ..., webhook: _Optional[_Union[Webhook, _Mapping]] = ...) -> None: ...

class DeleteWebhookRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteWebhookResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetWebhookDeliveryRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetWebhookRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListWebhookDeliveriesRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "parent"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    parent: str
    def __init__(self, parent: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWebhookDeliveriesResponse(_message.Message):
    __slots__ = ["deliveries", "next_page_token"]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    deliveries: _containers.RepeatedCompositeFieldContainer[WebhookDelivery]
    next_page_token: str
    def __init__(self, deliveries: _Optional[_Iterable[_Union[WebhookDelivery, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListWebhooksRequest(_message.Message):
    __slots__ = ["parent"]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    parent: str
    def __init__(self, parent: _Optional[str] = ...) -> None: ...

class ListWebhooksResponse(_message.Message):
    __slots__ = ["webhooks"]
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    webhooks: _containers.RepeatedCompositeFieldContainer[Webhook]
    def __init__(self, webhooks: _Optional[_Iterable[_Union[Webhook, _Mapping]]] = ...) -> None: ...

class PingWebhookRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RedeliverWebhookDeliveryRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UpdateWebhookRequest(_message.Message):
    __slots__ = ["update_mask", "webhook"]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    update_mask: _field_mask_pb2.FieldMask
    webhook: Webhook
    def __init__(self, webhook: _Optional[_Union[Webhook, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class Webhook(_message.Message):
    __slots__ = ["create_time", "description", "event_types", "label_selector", "name", "signing_secret", "state", "state_reason", "update_time", "url"]
    class LabelSelectorEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_REASON_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    description: str
    event_types: _containers.RepeatedScalarFieldContainer[WebhookEventType]
    label_selector: _containers.ScalarMap[str, str]
    name: str
    signing_secret: str
    state: WebhookState
    state_reason: str
    update_time: _timestamp_pb2.Timestamp
    url: str
    def __init__(self, name: _Optional[str] = ..., url: _Optional[str] = ..., event_types: _Optional[_Iterable[_Union[WebhookEventType, str]]] = ..., label_selector: _Optional[_Mapping[str, str]] = ..., signing_secret: _Optional[str] = ..., description: _Optional[str] = ..., state: _Optional[_Union[WebhookState, str]] = ..., state_reason: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WebhookDelivery(_message.Message):
    __slots__ = ["attempts", "create_time", "event_time", "last_attempt_time", "last_error", "last_latency", "last_status_code", "message_id", "name", "next_attempt_time", "state", "subject", "type"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_LATENCY_FIELD_NUMBER: _ClassVar[int]
    LAST_STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    create_time: _timestamp_pb2.Timestamp
    event_time: _timestamp_pb2.Timestamp
    last_attempt_time: _timestamp_pb2.Timestamp
    last_error: str
    last_latency: _duration_pb2.Duration
    last_status_code: int
    message_id: str
    name: str
    next_attempt_time: _timestamp_pb2.Timestamp
    state: DeliveryState
    subject: str
    type: str
    def __init__(self, name: _Optional[str] = ..., message_id: _Optional[str] = ..., type: _Optional[str] = ..., subject: _Optional[str] = ..., event_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., state: _Optional[_Union[DeliveryState, str]] = ..., attempts: _Optional[int] = ..., next_attempt_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_attempt_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_status_code: _Optional[int] = ..., last_error: _Optional[str] = ..., last_latency: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WebhookEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class WebhookState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DeliveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
