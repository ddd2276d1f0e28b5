"""Salesforce world tools; every mutation goes through the schema store.

Errors are raised in the vendor's shape: a JSON array of
``{"message", "errorCode", "fields"}`` objects, as documented under
"Status Codes and Error Responses" in the REST API Developer Guide. The
error codes are the ones the SOAP API's StatusCode enumeration defines;
provenance.json lists which handler raises which.
"""

import json
import re

from gateway_env import store, tool

#: The API version the pinned documentation describes (Winter '27).
API_VERSION = "v68.0"

#: SOQL object name -> entity. Standard objects only; a bound org's custom
#: objects arrive through describe-on-bind and extend this map with the world.
OBJECTS = {
    "Account": "sf_accounts",
    "Case": "sf_cases",
    "Contact": "sf_contacts",
    "Lead": "sf_leads",
    "Opportunity": "sf_opportunities",
    "Task": "sf_tasks",
    "User": "sf_users",
}

#: Field names per entity, in world.json order, so SELECT resolves a column
#: name against an empty table. Keep in step with the entity schemas.
FIELDS = {
    "sf_users": (
        "Id",
        "AboutMe",
        "AccountId",
        "Address",
        "Alias",
        "BadgeText",
        "BannerPhotoUrl",
        "CallCenterId",
        "City",
        "CommunityNickname",
        "CompanyName",
        "ContactId",
        "Country",
        "CountryCode",
        "CurrentStatus",
        "DefaultCurrencyIsoCode",
        "DefaultDivision",
        "DefaultGroupNotificationFrequency",
        "DelegatedApproverId",
        "Department",
        "DigestFrequency",
        "Division",
        "Email",
        "EmailEncodingKey",
        "EmailPreferencesAutoBcc",
        "EmployeeNumber",
        "EndDay",
        "Extension",
        "Fax",
        "FederationIdentifier",
        "FirstName",
        "ForecastEnabled",
        "FullPhotoUrl",
        "GeocodeAccuracy",
        "HasUserVerifiedEmail",
        "HasUserVerifiedPhone",
        "IndividualId",
        "IsActive",
        "IsPartner",
        "IsPortalEnabled",
        "IsPortalSelfRegistered",
        "IsPrmSuperUser",
        "IsProfilePhotoActive",
        "JigsawImportLimitOverride",
        "LanguageLocaleKey",
        "LastLoginDate",
        "LastName",
        "LastReferencedDate",
        "LastViewedDate",
        "Latitude",
        "LocaleSidKey",
        "Longitude",
        "Manager",
        "ManagerId",
        "MediumBannerPhotoUrl",
        "MiddleName",
        "MobilePhone",
        "Name",
        "NumberOfFailedLogins",
        "OfflineTrialExpirationDate",
        "PasswordExpirationDate",
        "Phone",
        "PortalRole",
        "PostalCode",
        "ProfileId",
        "ReceivesAdminInfoEmails",
        "ReceivesInfoEmails",
        "SenderEmail",
        "SenderName",
        "Signature",
        "SmallBannerPhotoUrl",
        "SmallPhotoUrl",
        "StartDay",
        "State",
        "StateCode",
        "Street",
        "SuAccessExpirationDate",
        "Suffix",
        "TimeZoneSidKey",
        "Title",
        "Username",
        "UserPermissionsCallCenterAutoLogin",
        "UserPermissionsChatterAnswersUser",
        "UserPermissionsInteractionUser",
        "UserPermissionsJigsawProspectingUser",
        "UserPermissionsKnowledgeUser",
        "UserPermissionsLiveAgentUser",
        "UserPermissionsMarketingUser",
        "UserPermissionsOfflineUser",
        "UserPermissionsSFContentUser",
        "UserPermissionsSiteforceContributorUser",
        "UserPermissionsSiteforcePublisherUser",
        "UserPermissionsSupportUser",
        "UserPermissionsWirelessUser",
        "UserPermissionsWorkDotComUserFeature",
        "UserPreferencesActivityRemindersPopup",
        "UserPreferencesAgentGdprConsent",
        "UserPreferencesAllowConversationReminders",
        "UserPreferencesApexPagesDeveloperMode",
        "UserPreferencesAutoForwardCall",
        "UserPreferencesContentEmailAsAndWhen",
        "UserPreferencesContentNoEmail",
        "UserPreferencesEnableAutoSubForFeeds",
        "UserPreferencesDisableAllFeedsEmail",
        "UserPreferencesDisableAutoSubForFeeds",
        "UserPreferencesDisableBookmarkEmail",
        "UserPreferencesDisableChangeCommentEmail",
        "UserPreferencesDisableEndorsementEmail",
        "UserPreferencesDisableFileShareNotificationsForApi",
        "UserPreferencesDisableFollowersEmail",
        "UserPreferencesDisableLaterCommentEmail",
        "UserPreferencesDisableLikeEmail",
        "UserPreferencesDisableMentionsPostEmail",
        "UserPreferencesDisableProfilePostEmail",
        "UserPreferencesDisableSharePostEmail",
        "UserPreferencesDisableFeedbackEmail",
        "UserPreferencesDisCommentAfterLikeEmail",
        "UserPreferencesDisMentionsCommentEmail",
        "UserPreferencesDisableMessageEmail",
        "UserPreferencesDisableRewardEmail",
        "UserPreferencesDisableWorkEmail",
        "UserPreferencesDisProfPostCommentEmail",
        "UserPreferencesEnableVoiceCallRecording",
        "UserPreferencesEnableVoiceLocalPresence",
        "UserPreferencesEventRemindersCheckboxDefault",
        "UserPreferencesHideBiggerPhotoCallout",
        "UserPreferencesHideChatterOnboardingSplash",
        "UserPreferencesHideCSNDesktopTask",
        "UserPreferencesHideCSNGetChatterMobileTask",
        "UserPreferencesHideEndUserOnboardingAssistantModal",
        "UserPreferencesHideLightningMigrationModal",
        "UserPreferencesHideSecondChatterOnboardingSplash",
        "UserPreferencesHideS1BrowserUI",
        "UserPreferencesHideSfxWelcomeMat",
        "UserPreferencesJigsawListUser",
        "UserPreferencesLightningExperiencePreferred",
        "UserPreferencesLiveAgentMiawSetupDeflection",
        "UserPreferencesNativeEmailClient",
        "UserPreferencesOptOutOfTouch",
        "UserPreferencesOutboundBridge",
        "UserPreferencesPathAssistantCollapsed",
        "UserPreferencesProcessAssistantCollapsed",
        "UserPreferencesReceiveNoNotificationsAsApprover",
        "UserPreferencesReceiveNotificationsAsDelegatedApprover",
        "UserPreferencesReminderSoundOff",
        "UserPreferencesShowCityToExternalUsers",
        "UserPreferencesShowCityToGuestUsers",
        "UserPreferencesShowCountryToExternalUsers",
        "UserPreferencesShowCountryToGuestUsers",
        "UserPreferencesShowEmailToExternalUsers",
        "UserPreferencesShowEmailToGuestUsers",
        "UserPreferencesShowFaxToExternalUsers",
        "UserPreferencesShowFaxToGuestUsers",
        "UserPreferencesShowManagerToExternalUsers",
        "UserPreferencesShowManagerToGuestUsers",
        "UserPreferencesShowMobilePhoneToExternalUsers",
        "UserPreferencesShowMobilePhoneToGuestUsers",
        "UserPreferencesShowPostalCodeToExternalUsers",
        "UserPreferencesShowPostalCodeToGuestUsers",
        "UserPreferencesShowProfilePicToGuestUsers",
        "UserPreferencesShowStateToExternalUsers",
        "UserPreferencesShowStateToGuestUsers",
        "UserPreferencesShowStreetAddressToExternalUsers",
        "UserPreferencesShowStreetAddressToGuestUsers",
        "UserPreferencesShowTitleToExternalUsers",
        "UserPreferencesShowTitleToGuestUsers",
        "UserPreferencesShowWorkPhoneToExternalUsers",
        "UserPreferencesShowWorkPhoneToGuestUsers",
        "UserPreferencesSortFeedByComment",
        "UserPreferencesSuppressEventSFXReminders",
        "UserPreferencesSuppressTaskSFXReminders",
        "UserPreferencesTaskRemindersCheckboxDefault",
        "UserPreferencesUserDebugModePref",
        "UserRoleId",
        "UserType",
        "WirelessEmail",
    ),
    "sf_accounts": (
        "Id",
        "AccountNumber",
        "AccountSource",
        "ActivityMetricId",
        "ActivityMetricRollupId",
        "AnnualRevenue",
        "BillingAddress",
        "BillingCity",
        "BillingCountry",
        "BillingCountryCode",
        "BillingGeocodeAccuracy",
        "BillingLatitude",
        "BillingLongitude",
        "BillingPostalCode",
        "BillingState",
        "BillingStateCode",
        "BillingStreet",
        "ChannelProgramLevelName",
        "ChannelProgramName",
        "CleanStatus",
        "CommerceCustomerReference",
        "CommerceGroupReference",
        "CommerceOrganizationReference",
        "ConnectionReceivedId",
        "ConnectionSentId",
        "Description",
        "DunsNumber",
        "Fax",
        "Industry",
        "IsBuyer",
        "IsCustomerPortal",
        "IsPartner",
        "IsPersonAccount",
        "IsPriorityRecord",
        "Jigsaw",
        "JigsawCompanyId",
        "LastActivityDate",
        "LastReferencedDate",
        "LastViewedDate",
        "MasterRecordId",
        "NaicsCode",
        "NaicsDesc",
        "Name",
        "NumberOfEmployees",
        "OperatingHoursId",
        "OwnerId",
        "Ownership",
        "ParentId",
        "PersonActionCadenceAssigneeId",
        "PersonActionCadenceId",
        "PersonActionCadenceState",
        "PersonIndividualId",
        "PersonScheduledResumeDateTime",
        "Phone",
        "PhotoUrl",
        "Rating",
        "RecordTypeId",
        "Salutation",
        "ShippingAddress",
        "ShippingCity",
        "ShippingCountry",
        "ShippingCountryCode",
        "ShippingGeocodeAccuracy",
        "ShippingLatitude",
        "ShippingLongitude",
        "ShippingPostalCode",
        "ShippingState",
        "ShippingStateCode",
        "ShippingStreet",
        "Sic",
        "SicDesc",
        "Site",
        "TickerSymbol",
        "Tradestyle",
        "Type",
        "Website",
        "YearStarted",
        "FirstName",
        "LastName",
        "MiddleName",
        "PersonAssistantName",
        "PersonAssistantPhone",
        "PersonBirthDate",
        "PersonContactId",
        "PersonDepartment",
        "PersonEmail",
        "PersonEmailBouncedDate",
        "PersonEmailBouncedReason",
        "PersonGenderIdentity",
        "PersonHasOptedOutOfEmail",
        "PersonHomePhone",
        "PersonLeadSource",
        "PersonMailingAddress",
        "PersonMailingCity",
        "PersonMailingCountry",
        "PersonMailingPostalCode",
        "PersonMailingState",
        "PersonMailingCountryCode",
        "PersonMailingStateCode",
        "PersonMailingGeocodeAccuracy",
        "PersonMailingLatitude",
        "PersonMailingLongitude",
        "PersonMailingStreet",
        "PersonMobilePhone",
        "PersonOtherCity",
        "PersonOtherCountry",
        "PersonOtherPostalCode",
        "PersonOtherState",
        "PersonOtherCountryCode",
        "PersonOtherStateCode",
        "PersonOtherLatitude",
        "PersonOtherLongitude",
        "PersonOtherPhone",
        "PersonOtherStreet",
        "PersonPronouns",
        "PersonReportsToId",
        "PersonTitle",
        "Suffix",
    ),
    "sf_contacts": (
        "Id",
        "AccountId",
        "ActionCadenceAssigneeId",
        "ActionCadenceId",
        "ActionCadenceState",
        "ActiveTrackerCount",
        "ActivityMetricId",
        "ActivityMetricRollupId",
        "AssistantName",
        "AssistantPhone",
        "Birthdate",
        "BuyerAttributes",
        "CanAllowPortalSelfReg",
        "CleanStatus",
        "CommerceCustomerReference",
        "CommerceGroupReference",
        "CommerceOrganizationReference",
        "ConnectionReceivedId",
        "ConnectionSentId",
        "ContactSource",
        "Department",
        "DepartmentGroup",
        "Description",
        "DoNotCall",
        "Email",
        "EmailBouncedDate",
        "EmailBouncedReason",
        "Fax",
        "FirstCallDateTime",
        "FirstEmailDateTime",
        "FirstName",
        "GenderIdentity",
        "HasOptedOutOfEmail",
        "HasOptedOutOfFax",
        "HomePhone",
        "IndividualId",
        "IsDeleted",
        "IsEmailBounced",
        "IsPersonAccount",
        "IsPriorityRecord",
        "Jigsaw",
        "JigsawContactId",
        "LastActivityDate",
        "LastName",
        "LastReferencedDate",
        "LastViewedDate",
        "LeadSource",
        "MailingAddress",
        "MailingCity",
        "MailingCountry",
        "MailingCountryCode",
        "MailingGeocodeAccuracy",
        "MailingLatitude",
        "MailingLongitude",
        "MailingPostalCode",
        "MailingState",
        "MailingStateCode",
        "MailingStreet",
        "MasterRecordId",
        "MiddleName",
        "MobilePhone",
        "Name",
        "OtherAddress",
        "OtherCity",
        "OtherCountry",
        "OtherCountryCode",
        "OtherGeocodeAccuracy",
        "OtherLatitude",
        "OtherLongitude",
        "OtherPhone",
        "OtherPostalCode",
        "OtherState",
        "OtherStateCode",
        "OtherStreet",
        "OwnerId",
        "Phone",
        "PhotoUrl",
        "Pronouns",
        "RecordTypeId",
        "ReportsToId",
        "Salutation",
        "ScheduledResumeDateTime",
        "Suffix",
        "Title",
        "TitleType",
    ),
    "sf_leads": (
        "Id",
        "ActionCadenceAssigneeId",
        "ActionCadenceId",
        "ActionCadenceState",
        "ActiveTrackerCount",
        "ActivityMetricId",
        "ActivityMetricRollupId",
        "Address",
        "AnnualRevenue",
        "City",
        "CleanStatus",
        "Company",
        "CompanyDunsNumber",
        "ConvertedAccountId",
        "ConvertedContactId",
        "ConvertedDate",
        "ConvertedOpportunityId",
        "ConnectionReceivedId",
        "ConnectionSentId",
        "Country",
        "CountryCode",
        "CurrencyIsoCode",
        "DandBCompanyId",
        "Description",
        "Division",
        "Email",
        "EmailBouncedDate",
        "EmailBouncedReason",
        "ExportStatus",
        "Fax",
        "FirstCallDateTime",
        "FirstEmailDateTime",
        "FirstName",
        "GeocodeAccuracy",
        "GenderIdentity",
        "HasOptedOutOfEmail",
        "HasOptedOutOfFax",
        "IndividualId",
        "Industry",
        "IsConverted",
        "IsDeleted",
        "IsPriorityRecord",
        "IsUnreadByOwner",
        "Jigsaw",
        "JigsawContactId",
        "LastActivityDate",
        "LastName",
        "LastReferencedDate",
        "LastViewedDate",
        "Latitude",
        "LeadSource",
        "Longitude",
        "MasterRecordId",
        "MiddleName",
        "MobilePhone",
        "Name",
        "NumberOfEmployees",
        "OwnerId",
        "PartnerAccountId",
        "Phone",
        "PhotoUrl",
        "PostalCode",
        "Pronouns",
        "Rating",
        "RecordTypeId",
        "Salutation",
        "ScheduledResumeDateTime",
        "ScoreIntelligenceId",
        "State",
        "StateCode",
        "Status",
        "Street",
        "Suffix",
        "Title",
        "Website",
    ),
    "sf_opportunities": (
        "Id",
        "AccountId",
        "ActivityMetricId",
        "ActivityMetricRollupId",
        "AgeInDays",
        "Amount",
        "CampaignId",
        "CloseDate",
        "ConnectionReceivedId",
        "ConnectionSentId",
        "ContactId",
        "ContractId",
        "CurrencyIsoCode",
        "Description",
        "ExpectedRevenue",
        "ExportStatus",
        "Fiscal",
        "FiscalQuarter",
        "FiscalYear",
        "ForecastCategory",
        "ForecastCategoryName",
        "HasOpenActivity",
        "HasOpportunityLineItem",
        "HasOverdueTask",
        "IqScore",
        "IsClosed",
        "IsDeleted",
        "IsExcludedFromTerritory2Filter",
        "IsPriorityRecord",
        "IsPrivate",
        "IsSplit",
        "IsWon",
        "LastActivityDate",
        "LastActivityInDays",
        "LastAmountChangedHistoryId",
        "LastCloseDateChangedHistoryId",
        "LastReferencedDate",
        "LastStageChangeDate",
        "LastStageChangeInDays",
        "LastViewedDate",
        "LeadSource",
        "Name",
        "NextStep",
        "OwnerId",
        "PartnerAccountId",
        "Pricebook2Id",
        "PricebookId",
        "Probability",
        "PushCount",
        "RecordTypeId",
        "StageName",
        "SyncedQuoteID",
        "Territory2Id",
        "TotalOpportunityQuantity",
        "Type",
    ),
    "sf_cases": (
        "Id",
        "AccountId",
        "AssetWarrantyID",
        "BusinessHoursId",
        "Comments",
        "CaseNumber",
        "ClosedDate",
        "CommunityId",
        "ConnectionReceivedId",
        "ConnectionSentId",
        "ContactEmail",
        "ContactFax",
        "ContactId",
        "ContactMobile",
        "ContactPhone",
        "CreatorFullPhotoUrl",
        "CreatorName",
        "CreatorSmallPhotoUrl",
        "Description",
        "FeedItemId",
        "HasCommentsUnreadByOwner",
        "HasSelfServiceComments",
        "IsClosed",
        "IsClosedOnCreate",
        "IsDeleted",
        "IsEscalated",
        "IsSelfServiceClosed",
        "IsStopped",
        "IsVisibleInSelfService",
        "Language",
        "LastReferencedDate",
        "LastViewedDate",
        "MasterRecordId",
        "Origin",
        "OwnerId",
        "ParentId",
        "Priority",
        "QuestionId",
        "Reason",
        "RecordTypeId",
        "ServiceContractId",
        "SlaStartDate",
        "SourceId",
        "Status",
        "StopStartDate",
        "Subject",
        "SuppliedCompany",
        "SuppliedEmail",
        "SuppliedName",
        "SuppliedPhone",
        "Type",
    ),
    "sf_tasks": (
        "Id",
        "AccountId",
        "ActivityDate",
        "CallDisposition",
        "CallDurationInSeconds",
        "CallObject",
        "CallType",
        "CompletedDateTime",
        "ConnectionReceivedId",
        "ConnectionSentId",
        "Description",
        "IsArchived",
        "IsClosed",
        "IsHighPriority",
        "IsRecurrence",
        "IsReminderSet",
        "IsVisibleInSelfService",
        "OwnerId",
        "Priority",
        "RecurrenceActivityId",
        "RecurrenceDayOfMonth",
        "RecurrenceDayOfWeekMask",
        "RecurrenceEndDateOnly",
        "RecurrenceInstance",
        "RecurrenceInterval",
        "RecurrenceMonthOfYear",
        "RecurrenceRegeneratedType",
        "RecurrenceStartDateOnly",
        "RecurrenceTimeZoneSidKey",
        "RecurrenceType",
        "ReminderDateTime",
        "Status",
        "Subject",
        "TaskSubtype",
        "TaskWhoIds",
        "Type",
        "WhatCount",
        "WhatId",
        "WhoCount",
        "WhoId",
    ),
}

#: StageName drives IsWon and IsClosed; neither is directly settable.
WON = "Closed Won"
LOST = "Closed Lost"

QUERY = re.compile(
    r"""\s*SELECT\s+(?P<fields>[^;]+?)
        \s+FROM\s+(?P<object>[A-Za-z][A-Za-z0-9_]*)
        (?:\s+WHERE\s+(?P<where>.+?))?
        (?:\s+ORDER\s+BY\s+(?P<order>[A-Za-z][A-Za-z0-9_]*)(?:\s+(?P<direction>ASC|DESC))?)?
        (?:\s+LIMIT\s+(?P<limit>\d+))?
        \s*$""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
CONDITION = re.compile(r"^(?P<field>[A-Za-z][A-Za-z0-9_]*)\s*(?P<operator>!=|<=|>=|=|<|>)\s*(?P<literal>.+)$")
COMPARISONS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: _ordered(a, b) < 0,
    "<=": lambda a, b: _ordered(a, b) <= 0,
    ">": lambda a, b: _ordered(a, b) > 0,
    ">=": lambda a, b: _ordered(a, b) >= 0,
}


def error(code, message, fields=()):
    """The vendor's error body, verbatim in shape."""
    return ValueError(json.dumps([{"message": message, "errorCode": code, "fields": list(fields)}]))


def _rank(value):
    """Order NULL first, then booleans, numbers and text, as SOQL sorts."""
    if value is None:
        return (0, 0, "")
    if isinstance(value, bool):
        return (1, int(value), "")
    if isinstance(value, (int, float)):
        return (2, value, "")
    return (3, 0, str(value))


def _ordered(left, right):
    a, b = _rank(left), _rank(right)
    return (a > b) - (a < b)


def _derive(stage):
    return {"IsClosed": stage in (WON, LOST), "IsWon": stage == WON}


def _reference(entity, value, field):
    if value is not None and store.get(entity, {"Id": value}) is None:
        raise error(
            "INVALID_CROSS_REFERENCE_KEY",
            f"invalid cross reference id: {value}",
            [field],
        )


@tool(name="list_opportunities")
def list_opportunities(AccountId):
    return [o for o in store.list("sf_opportunities") if o.get("AccountId") == AccountId]


@tool(name="create_opportunity")
def create_opportunity(opportunity):
    _reference("sf_accounts", opportunity.get("AccountId"), "AccountId")
    _reference("sf_users", opportunity.get("OwnerId"), "OwnerId")
    record = {**opportunity, **_derive(opportunity["StageName"])}
    return store.insert("sf_opportunities", record, source={"record": "tool.create_opportunity"})


@tool(name="update_stage")
def update_stage(Id, StageName):
    if store.get("sf_opportunities", {"Id": Id}) is None:
        raise error("NOT_FOUND", "The requested resource does not exist", ["Id"])
    return store.update(
        "sf_opportunities",
        {"Id": Id},
        {"StageName": StageName, **_derive(StageName)},
        source={"record": "tool.update_stage"},
    )


@tool(name="query_records")
def query_records(soql):
    """SELECT fields FROM object [WHERE ...] [ORDER BY field [ASC|DESC]] [LIMIT n]."""
    parsed = QUERY.match(soql)
    if parsed is None:
        raise error("MALFORMED_QUERY", "An invalid query string was specified")
    name = _object(parsed.group("object"))
    known = {field.lower(): field for field in FIELDS[OBJECTS[name]]}
    fields = [_field(known, f) for f in parsed.group("fields").split(",")]
    rows = store.list(OBJECTS[name])
    for condition in _conditions(parsed.group("where")):
        rows = [row for row in rows if _matches(known, row, condition)]
    if parsed.group("order"):
        rows.sort(
            key=lambda row: _rank(row.get(_field(known, parsed.group("order")))),
            reverse=(parsed.group("direction") or "ASC").upper() == "DESC",
        )
    if parsed.group("limit"):
        rows = rows[: int(parsed.group("limit"))]
    records = [
        {
            "attributes": {
                "type": name,
                "url": f"/services/data/{API_VERSION}/sobjects/{name}/{row['Id']}",
            },
            **{field: row.get(field) for field in fields},
        }
        for row in rows
    ]
    return {"totalSize": len(records), "done": True, "records": records}


def _object(name):
    for candidate in OBJECTS:
        if candidate.lower() == name.lower():
            return candidate
    raise error("INVALID_TYPE", f"sObject type '{name}' is not supported")


def _field(known, name):
    field = known.get(name.strip().lower())
    if field is None:
        raise error("INVALID_FIELD", f"No such column '{name.strip()}'", [name.strip()])
    return field


def _conditions(where):
    if not where:
        return []
    parsed = []
    for clause in re.split(r"\s+AND\s+", where.strip(), flags=re.IGNORECASE):
        match = CONDITION.match(clause.strip())
        if match is None:
            raise error("MALFORMED_QUERY", "An invalid query string was specified")
        parsed.append((match.group("field"), match.group("operator"), _literal(match.group("literal"))))
    return parsed


def _literal(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1]
    if text.upper() == "NULL":
        return None
    if text.upper() in ("TRUE", "FALSE"):
        return text.upper() == "TRUE"
    try:
        return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    except ValueError:
        raise error("MALFORMED_QUERY", "An invalid query string was specified") from None


def _matches(known, row, condition):
    field, operator, literal = condition
    return COMPARISONS[operator](row.get(_field(known, field)), literal)
